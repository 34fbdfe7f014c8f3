# Writes a C++ file that holds one text file verbatim as a raw string literal.
# Run at build time:
#   cmake -DINPUT=<file> -DOUTPUT=<file.cpp> -DSYMBOL=<identifier> -P EmbedFile.cmake
# The generated file defines, in namespace attnc::templates::embedded,
#   extern const char SYMBOL[];          // NUL-terminated text
#   extern const std::size_t SYMBOL_size; // strlen
foreach(var INPUT OUTPUT SYMBOL)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "EmbedFile.cmake: ${var} is not set")
  endif()
endforeach()

file(READ "${INPUT}" content)
set(delim "attnc_embed")
string(FIND "${content}" ")${delim}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )${delim}\"")
endif()

set(text "// Generated from ${INPUT} by EmbedFile.cmake; do not edit.\n")
string(APPEND text "#include <cstddef>\n")
string(APPEND text "namespace attnc::templates::embedded {\n")
string(APPEND text "extern const char ${SYMBOL}[];\n")
string(APPEND text "extern const std::size_t ${SYMBOL}_size;\n")
string(APPEND text "const char ${SYMBOL}[] = R\"${delim}(")
string(APPEND text "${content}")
string(APPEND text ")${delim}\";\n")
string(APPEND text "const std::size_t ${SYMBOL}_size = sizeof(${SYMBOL}) - 1;\n")
string(APPEND text "} // namespace attnc::templates::embedded\n")

# Rewrite only on change, so that dependants are not rebuilt needlessly.
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
  if(old STREQUAL text)
    return()
  endif()
endif()
file(WRITE "${OUTPUT}" "${text}")
