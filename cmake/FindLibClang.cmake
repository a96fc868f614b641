# Finds libclang's C API (Debian: libclang-16-dev) and defines LibClang::LibClang.
# LIBCLANG_ROOT or LLVM_CONFIG may point elsewhere; we prefer LLVM 16, which is
# the version whose CUDA support the frontend was written against.
set(_ks_llvm_hints "${LIBCLANG_ROOT}" /usr/lib/llvm-16 /usr/lib/llvm-17 /usr/lib/llvm-18)
find_path(LibClang_INCLUDE_DIR clang-c/Index.h
  HINTS ${_ks_llvm_hints} PATH_SUFFIXES include NO_DEFAULT_PATH)
find_library(LibClang_LIBRARY NAMES clang-16 clang
  HINTS ${_ks_llvm_hints} PATH_SUFFIXES lib NO_DEFAULT_PATH)

# clang's own resource headers (__clang_cuda_runtime_wrapper.h and friends):
# libclang needs them at run time to parse CUDA.
if(LibClang_LIBRARY)
  get_filename_component(_ks_llvm_lib "${LibClang_LIBRARY}" DIRECTORY)
  file(GLOB _ks_resource_dirs LIST_DIRECTORIES true "${_ks_llvm_lib}/clang/*")
  foreach(_d IN LISTS _ks_resource_dirs)
    if(EXISTS "${_d}/include/__clang_cuda_runtime_wrapper.h")
      set(LibClang_RESOURCE_DIR "${_d}" CACHE PATH "clang resource directory")
    endif()
  endforeach()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LibClang
  REQUIRED_VARS LibClang_LIBRARY LibClang_INCLUDE_DIR LibClang_RESOURCE_DIR)

if(LibClang_FOUND AND NOT TARGET LibClang::LibClang)
  add_library(LibClang::LibClang UNKNOWN IMPORTED)
  set_target_properties(LibClang::LibClang PROPERTIES
    IMPORTED_LOCATION "${LibClang_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LibClang_INCLUDE_DIR}")
endif()
