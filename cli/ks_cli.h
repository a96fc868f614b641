/* ks_cli: the command-line front: global options, the subcommand table and
 * the helpers every cmd_*.c shares. Each command parses its own options into
 * a typed struct, calls the libraries, and maps the outcome to an exit code:
 * KS_EXIT_OK, KS_EXIT_FAILURE, or KS_EXIT_USAGE for a bad command line.
 * Data goes to stdout, messages to stderr. */
#ifndef KS_CLI_H
#define KS_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "ks_ctx.h"

enum { KS_EXIT_OK = 0, KS_EXIT_FAILURE = 1, KS_EXIT_USAGE = 2 };

typedef struct ks_command {
  const char *name;
  const char *summary; /* one line for the program's --help */
  const char *usage;   /* the command's --help text */
  int (*run)(ks_ctx *ctx, int argc, char **argv);
} ks_command;

extern const ks_command ks_cmd_scan;
extern const ks_command ks_cmd_extract;
extern const ks_command ks_cmd_doctor;
extern const ks_command ks_cmd_check;
extern const ks_command ks_cmd_bench;
extern const ks_command ks_cmd_spec;
extern const ks_command ks_cmd_rewrite;
extern const ks_command ks_cmd_optimize;
extern const ks_command ks_cmd_status;
extern const ks_command ks_cmd_apply;
extern const ks_command ks_cmd_revert;
extern const ks_command ks_cmd_stats;
extern const ks_command ks_cmd_export;
extern const ks_command ks_cmd_profile;
extern const ks_command ks_cmd_replay;
extern const ks_command ks_cmd_verify;
extern const ks_command ks_cmd_tune;

/* Prints "<prog> <cmd>: <message>" and a hint to use --help; returns
 * KS_EXIT_USAGE. */
int ks_usage_error(ks_ctx *ctx, const ks_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prints the command's help on stdout; returns KS_EXIT_OK. */
int ks_print_help(const ks_command *cmd);

/* Option parsing shared by the commands: getopt_long with the standard
 * "-h/--help" handled, and errors reported as usage errors. */
#define KS_OPT_HELP 'h'

/* Parses a non-negative integer option value; -1 on a bad one. */
long ks_parse_count(const char *text);
/* --devices: "all", or CUDA ordinals (0 to 255) separated by commas, one
 * worker each (an ordinal may repeat: two workers on one GPU). Fills
 * out[0..*n) (at most KS_MAX_WORKERS) or sets *all; -1 on bad text. */
enum { KS_MAX_WORKERS = 64 };
int ks_parse_devices(const char *text, int *out, size_t *n, bool *all);
/* A byte count: digits, optionally followed by K, M or G (powers of 1024,
 * "KiB"/"MiB"/"GiB" too); -1 when not one. */
long long ks_parse_bytes(const char *text);

#endif
