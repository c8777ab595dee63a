# Checks every include of core/, ui/ and app/ against the layering written once in
# core/layers.cmake: a file may include its own folder and the folders before it there, never one
# after it. Folders are the first path component after core/ (core/nn and core/nn/transformer are
# both "nn"); ui/ is "ui" and everything under app/ is "app". The build holds the core's part too
# (each floor's library compiles only with the folders it links), this test the whole order.
#   cmake -DROOT=<source dir> -P tests/layering/check_layering.cmake
# Prints each upward include as "<file>: <folder> includes <folder>/... (<the line>)" and fails.

if(NOT DEFINED ROOT)
  message(FATAL_ERROR "check_layering: pass -DROOT=<source dir>")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/../../core/layers.cmake) # the order, whatever ROOT is checked

function(layer_of path out)
  set(${out} "" PARENT_SCOPE)
  if(path MATCHES "^core/([^/]+)/")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  elseif(path MATCHES "^ui/")
    set(${out} ui PARENT_SCOPE)
  elseif(path MATCHES "^app/")
    set(${out} app PARENT_SCOPE)
  endif()
endfunction()

# The floors' libraries must agree with the order: every core folder in exactly one floor, and a
# floor links only floors whose folders all come before its own.
set(violations 0)
set(floored)
foreach(floor IN LISTS PLAB_CORE_FLOORS)
  list(APPEND floored ${PLAB_FLOOR_FOLDERS_${floor}})
  set(lowest 1000)
  foreach(folder IN LISTS PLAB_FLOOR_FOLDERS_${floor})
    list(FIND PLAB_LAYERS ${folder} rank)
    if(rank LESS lowest)
      set(lowest ${rank})
    endif()
  endforeach()
  foreach(below IN LISTS PLAB_FLOOR_LINKS_${floor})
    foreach(folder IN LISTS PLAB_FLOOR_FOLDERS_${below})
      list(FIND PLAB_LAYERS ${folder} rank)
      if(NOT rank LESS lowest)
        message("core/layers.cmake: ${floor} links ${below}, whose folder ${folder} is not below "
                "${floor}'s folders in PLAB_LAYERS")
        math(EXPR violations "${violations} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()
foreach(folder IN LISTS PLAB_LAYERS)
  set(found ${floored})
  list(FILTER found INCLUDE REGEX "^${folder}$")
  list(LENGTH found times)
  if(NOT folder MATCHES "^(ui|app)$" AND NOT times EQUAL 1)
    message("core/layers.cmake: core/${folder} is in ${times} floors; it must be in exactly one")
    math(EXPR violations "${violations} + 1")
  endif()
endforeach()

file(GLOB_RECURSE sources RELATIVE "${ROOT}"
  "${ROOT}/core/*.h" "${ROOT}/core/*.cpp" "${ROOT}/core/*.cu" "${ROOT}/core/*.inl"
  "${ROOT}/ui/*.h" "${ROOT}/ui/*.cpp" "${ROOT}/app/*.h" "${ROOT}/app/*.cpp")
list(LENGTH sources count)
if(count EQUAL 0)
  message(FATAL_ERROR "check_layering: no sources under ${ROOT}/core, ui or app")
endif()

foreach(source IN LISTS sources)
  layer_of("${source}" from)
  list(FIND PLAB_LAYERS "${from}" fromRank)
  if(fromRank EQUAL -1)
    message(SEND_ERROR "${source}: folder '${from}' is not in PLAB_LAYERS; add it where it belongs")
    math(EXPR violations "${violations} + 1")
    continue()
  endif()
  file(STRINGS "${ROOT}/${source}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "#[ \t]*include[ \t]*\"([^\"/]+)/")
      continue() # same folder, or a library's header
    endif()
    list(FIND PLAB_LAYERS "${CMAKE_MATCH_1}" toRank)
    if(toRank GREATER fromRank)
      message("${source}: ${from} includes ${CMAKE_MATCH_1}/... (${line}); "
              "only ${from} and the folders before it may be included")
      math(EXPR violations "${violations} + 1")
    endif()
  endforeach()
endforeach()

if(violations GREATER 0)
  message(FATAL_ERROR "check_layering: ${violations} upward include(s) or floor(s) out of order; the order is "
                      "${PLAB_LAYERS} (core/layers.cmake)")
endif()
message(STATUS "check_layering: ${count} files, every include points down")
