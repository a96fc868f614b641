# Writes OUTPUT, a C file defining `const char NAME[]`: the bytes of INPUT
# and a terminating NUL. Run with cmake -P (see cli/CMakeLists.txt).
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n  " bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp" "/* Generated from ${INPUT} by cmake/embed.cmake. */\nconst char ${NAME}[] = {\n  ${bytes}0};\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
