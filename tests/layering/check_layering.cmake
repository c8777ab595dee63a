# The layering of core/, ui/ and app/, written once: a file may include its own folder and the
# folders before it in this list, never one after it, so that every include arrow points down
# (docs/architecture.md: numerics knows no network, a layer no data set, the engine no
# trainer, a snapshot no recipe). Folders are the first path component after core/ (core/nn and
# core/nn/transformer are both "nn"); ui/ is "ui" and everything under app/ is "app".
#   cmake -DROOT=<source dir> -P tests/layering/check_layering.cmake
# Prints each upward include as "<file>: <folder> includes <folder>/... (<the line>)" and fails.
set(PLAB_LAYERS util numerics nn data engine device cuda gpt stats record train watch sweep advise ui app)

if(NOT DEFINED ROOT)
  message(FATAL_ERROR "check_layering: pass -DROOT=<source dir>")
endif()

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

file(GLOB_RECURSE sources RELATIVE "${ROOT}"
  "${ROOT}/core/*.h" "${ROOT}/core/*.cpp" "${ROOT}/core/*.cu" "${ROOT}/core/*.inl"
  "${ROOT}/ui/*.h" "${ROOT}/ui/*.cpp" "${ROOT}/app/*.h" "${ROOT}/app/*.cpp")
list(LENGTH sources count)
if(count EQUAL 0)
  message(FATAL_ERROR "check_layering: no sources under ${ROOT}/core, ui or app")
endif()

set(violations 0)
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
  message(FATAL_ERROR "check_layering: ${violations} upward include(s); the order is "
                      "${PLAB_LAYERS} (tests/layering/check_layering.cmake)")
endif()
message(STATUS "check_layering: ${count} files, every include points down")
