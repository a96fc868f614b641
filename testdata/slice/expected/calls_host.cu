kernelsmith-cc: error: cannot slice 'calls_host': it calls host function 'host_helper' (unsliceable.cu:5)
