# The layering of core/, ui/ and app/, written once: a file may include its own folder and the
# folders before it in PLAB_LAYERS, never one after it, so that every include arrow points down
# (docs/architecture.md: numerics knows no network, a layer no data set, the engine no trainer, a
# snapshot no recipe). Read by core/CMakeLists.txt, which builds the floors as libraries, and by
# tests/layering/check_layering.cmake, which checks every include against the same order.
set(PLAB_CORE_DIR ${CMAKE_CURRENT_LIST_DIR})
set(PLAB_LAYERS util numerics nn data engine device gpt cuda stats record recipe train torch_runs
    sweep advise ui app)

# The static libraries that carry the core's floors, bottom first: each holds consecutive folders
# of PLAB_LAYERS and links only the libraries below it, so a call upward does not link and an
# include upward does not compile (plab_floor, below).
set(PLAB_CORE_FLOORS plab_numerics plab_engine plab_cuda plab_record plab_recipe plab_train
    plab_sweep)
set(PLAB_FLOOR_FOLDERS_plab_numerics util numerics)
set(PLAB_FLOOR_FOLDERS_plab_engine nn data engine device gpt)
set(PLAB_FLOOR_FOLDERS_plab_cuda cuda)
set(PLAB_FLOOR_FOLDERS_plab_record stats record)
set(PLAB_FLOOR_FOLDERS_plab_recipe recipe)
set(PLAB_FLOOR_FOLDERS_plab_train train)
set(PLAB_FLOOR_FOLDERS_plab_sweep torch_runs sweep advise)
# What each floor links (the libraries right below it; the rest come through them).
set(PLAB_FLOOR_LINKS_plab_numerics)
set(PLAB_FLOOR_LINKS_plab_engine plab_numerics)
set(PLAB_FLOOR_LINKS_plab_cuda plab_engine)
set(PLAB_FLOOR_LINKS_plab_record plab_numerics)
set(PLAB_FLOOR_LINKS_plab_recipe plab_engine)
set(PLAB_FLOOR_LINKS_plab_train plab_recipe plab_record)
set(PLAB_FLOOR_LINKS_plab_sweep plab_train)

# plab_floor_folders(<floor> <out>): the folders a floor's files may include: its own and those of
# every floor it links, directly or through another.
function(plab_floor_folders floor out)
  set(folders ${PLAB_FLOOR_FOLDERS_${floor}})
  foreach(below IN LISTS PLAB_FLOOR_LINKS_${floor})
    plab_floor_folders(${below} below_folders)
    list(APPEND folders ${below_folders})
  endforeach()
  list(REMOVE_DUPLICATES folders)
  set(${out} ${folders} PARENT_SCOPE)
endfunction()

# plab_floor(<floor>): links a floor's library to the floors under it, and makes an include of any
# other core folder stop the compiler with a line that says why: the floor compiles with a folder
# of one-line headers, one for each header it may not use, searched before core/ itself.
function(plab_floor floor)
  target_link_libraries(${floor} PUBLIC ${PLAB_FLOOR_LINKS_${floor}})
  target_include_directories(${floor} PUBLIC ${PLAB_CORE_DIR})
  plab_floor_folders(${floor} allowed)
  file(GLOB_RECURSE headers RELATIVE ${PLAB_CORE_DIR} CONFIGURE_DEPENDS
       ${PLAB_CORE_DIR}/*.h ${PLAB_CORE_DIR}/*.inl ${PLAB_CORE_DIR}/*.cuh)
  set(guards ${CMAKE_BINARY_DIR}/layering_guards/${floor})
  list(JOIN PLAB_FLOOR_FOLDERS_${floor} ", core/" own)
  foreach(header IN LISTS headers)
    string(REGEX MATCH "^[^/]+" folder "${header}")
    if(NOT folder IN_LIST allowed)
      file(CONFIGURE OUTPUT ${guards}/${header} CONTENT
           "#error \"${floor} (core/${own}) may not include ${header}: it links only the floors below it (core/layers.cmake)\"\n")
    endif()
  endforeach()
  target_include_directories(${floor} BEFORE PRIVATE ${guards})
endfunction()
