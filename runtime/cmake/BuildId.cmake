# Writes OUTPUT with `#define ATTNC_BUILD_ID "..."`: the build id that goes
# into every cache key. Unless OVERRIDE is set it hashes the sources that
# decide generated code (compiler/, dialects/ and the compiler/runtime
# contract abi/), so editing the compiler invalidates cached kernels, and two checkouts of the same sources (the
# build machine and a runtime-only GPU machine) agree on keys.
# Run as: cmake -DSOURCE_DIR=... -DOUTPUT=... -DVERSION=... [-DOVERRIDE=...]
#         -P BuildId.cmake
if(OVERRIDE)
  set(id "${OVERRIDE}")
else()
  set(patterns)
  foreach(dir abi compiler dialects)
    foreach(ext cpp cc c h hpp inc td mlir txt cmake)
      list(APPEND patterns "${SOURCE_DIR}/${dir}/*.${ext}")
    endforeach()
  endforeach()
  file(GLOB_RECURSE files RELATIVE "${SOURCE_DIR}" ${patterns})
  list(SORT files)
  set(manifest "")
  foreach(file IN LISTS files)
    file(SHA256 "${SOURCE_DIR}/${file}" digest)
    string(APPEND manifest "${file} ${digest}\n")
  endforeach()
  string(SHA256 digest "${manifest}")
  string(SUBSTRING "${digest}" 0 16 digest)
  set(id "${VERSION}-${digest}")
endif()
set(content "#define ATTNC_BUILD_ID \"${id}\"\n")
# Rewrite only on change so dependents do not rebuild every time.
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUTPUT}" "${content}")
endif()
