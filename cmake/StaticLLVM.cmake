# Re-points Debian's MLIR packages from libLLVM.so to LLVM's static
# component libraries. MLIR's exported targets name the dylib target `LLVM`
# in their link interface (LLVM_LINK_LLVM_DYLIB); every such mention becomes
# the static libraries, whose own interfaces order them. The linker then
# keeps only the members the compiler reaches, so taking every component
# (LLVM_AVAILABLE_LIBS) costs link time, not size. System libraries the archives mention (z3, zstd) are linked
# only where used (--as-needed).
# Only the archives the packages installed (Debian lists Polly's, which
# ships separately).
set(ATTNC_LLVM_STATIC_LIBS)
foreach(lib IN LISTS LLVM_AVAILABLE_LIBS)
  # Tool libraries that pull system libraries a compiler never needs
  # (libpfm, libedit, curl, libxml2) are left out.
  if(lib MATCHES "Exegesis|LineEditor|Debuginfod|WindowsManifest|Fuzz")
    continue()
  endif()
  if(TARGET ${lib} AND NOT lib STREQUAL "LLVM" AND
     EXISTS "${LLVM_LIBRARY_DIR}/lib${lib}.a")
    list(APPEND ATTNC_LLVM_STATIC_LIBS ${lib})
  endif()
endforeach()
# ... and no mention of those it did not (LLVMExtensions names Polly).
foreach(lib IN LISTS ATTNC_LLVM_STATIC_LIBS)
  get_target_property(links ${lib} INTERFACE_LINK_LIBRARIES)
  if(links AND "Polly" IN_LIST links AND
     NOT EXISTS "${LLVM_LIBRARY_DIR}/libPolly.a")
    list(REMOVE_ITEM links Polly)
    set_target_properties(${lib} PROPERTIES INTERFACE_LINK_LIBRARIES
                                            "${links}")
  endif()
endforeach()
if(NOT ATTNC_LLVM_STATIC_LIBS)
  message(FATAL_ERROR "ATTNC_STATIC_LLVM: LLVMConfig lists no static "
                      "component libraries (LLVM_AVAILABLE_LIBS)")
endif()
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
