/* kernelsmith_dispatch.h */
