# Warnings and sanitizers, applied through an interface target rather than
# global flags so that nothing leaks into imported dependencies.
add_library(ks_warnings INTERFACE)
add_library(ks::warnings ALIAS ks_warnings)
target_compile_options(ks_warnings INTERFACE
  -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
  -Wno-unused-parameter -Wformat=2 -Wvla)
target_compile_definitions(ks_warnings INTERFACE _POSIX_C_SOURCE=200809L _DEFAULT_SOURCE)

if(KS_SANITIZE)
  target_compile_options(ks_warnings INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer -g)
  target_link_options(ks_warnings INTERFACE -fsanitize=address,undefined)
endif()
