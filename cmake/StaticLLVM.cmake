# Re-points Debian's MLIR packages from libLLVM.so to LLVM's static
# component libraries. MLIR's exported targets name the dylib target `LLVM`
# in their link interface (LLVM_LINK_LLVM_DYLIB); every such mention becomes
# the static libraries, whose own interfaces order them. The linker then
# keeps only the members the compiler reaches, so "all" costs link time,
# not size. System libraries the archives mention (z3, zstd) are linked
# only where used (--as-needed).
llvm_map_components_to_libnames(ATTNC_LLVM_STATIC_LIBS all)
list(REMOVE_ITEM ATTNC_LLVM_STATIC_LIBS LLVM) # the dylib itself, if listed
foreach(target IN LISTS MLIR_EXPORTED_TARGETS)
  if(NOT TARGET ${target})
    continue()
  endif()
  get_target_property(type ${target} TYPE)
  if(NOT type MATCHES "LIBRARY")
    continue()
  endif()
  get_target_property(links ${target} INTERFACE_LINK_LIBRARIES)
  if(NOT links)
    continue()
  endif()
  list(FIND links LLVM at)
  if(at EQUAL -1)
    continue()
  endif()
  list(REMOVE_ITEM links LLVM)
  list(APPEND links ${ATTNC_LLVM_STATIC_LIBS})
  set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES
                                             "${links}")
endforeach()
add_link_options(-Wl,--as-needed)
message(STATUS "attnc: LLVM linked statically "
               "(${CMAKE_SOURCE_DIR}/cmake/StaticLLVM.cmake)")
