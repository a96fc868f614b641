/* kernelsmith-cc doctor: placeholder replaced by the backend work. */
#include "ks_cli.h"
static int run_doctor(ks_ctx *ctx, int argc, char **argv) { return KS_EXIT_OK; }
const ks_command ks_cmd_doctor = {"doctor", "check the toolchain and GPUs", "usage: kernelsmith-cc doctor\n", run_doctor};
