# Writes OUTPUT as a C++ raw string literal holding INPUT's text, so test
# binaries carry their PTX fixture and run from any directory.
# Run as: cmake -DINPUT=... -DOUTPUT=... -P EmbedText.cmake
file(READ "${INPUT}" text)
file(WRITE "${OUTPUT}" "R\"attnc_embed(${text})attnc_embed\"\n")
