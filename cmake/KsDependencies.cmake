# Every external dependency comes from the system (Debian packages) or the CUDA
# toolkit, as an imported target. scripts/setup.sh installs the packages.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(LibClang REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(ZLIB REQUIRED)
pkg_check_modules(CJSON REQUIRED IMPORTED_TARGET libcjson)
pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)

# The CUDA toolkit: CUDA_HOME, then /usr/local/cuda. We link NVRTC (and later
# CUPTI) from it; the driver itself is always loaded with dlopen.
if(NOT CUDAToolkit_ROOT)
  if(DEFINED ENV{CUDA_HOME})
    set(CUDAToolkit_ROOT "$ENV{CUDA_HOME}")
  elseif(EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
endif()
find_package(CUDAToolkit REQUIRED)
