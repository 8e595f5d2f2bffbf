/* The summary of a fuzz campaign as data: what `kiln fuzz` writes to OUT/fuzz.json at its end
 * and what `kiln fuzz --merge` reads back from the shards of one campaign, unites and prints.
 *
 *   kiln_fuzz_summary all = {0}, part;
 *   for each shard folder d:
 *     KILN_TRY(kiln_fuzz_summary_read("d/fuzz.json", &part));   // bad file: KILN_ERR_INVALID
 *     KILN_TRY(kiln_fuzz_summary_merge(&all, &part));
 *     kiln_fuzz_summary_free(&part);
 *   kiln_fuzz_summary_print(stdout, &all);
 *
 * The file (version 1) is one JSON object:
 *   {"format": "kiln-fuzz-summary", "version": 1, "seed": 7, "shard": 0, "shards": 2,
 *    "parts": [0], "seconds": 60.2,
 *    "graphs": {"tried": 80, "valid": 77, "invalid": 0, "no_inputs": 3, "runner_errors": 0,
 *               "compiled": 25},
 *    "failures": [{"signature": "...", "count": 2, "dir": "0f3a...", "first_graph": 14}],
 *    "cells": {"op:Conv|auto_pad=SAME_UPPER|f32": 3, ...},
 *    "edges": null or "IIIIVV..."}
 * where edges lists the nonzero entries of the KILN_EDGE_MAP counters (src/base/edges.h) as 4
 * hex digits of index and 2 of value each, in increasing index order. Unknown keys are skipped
 * (a later version may add some). */
#ifndef KILN_FUZZ_SUMMARY_H
#define KILN_FUZZ_SUMMARY_H

#include <stdio.h>

#include "base/base.h"

typedef struct kiln_fuzz_failure {
  char *signature;     /* the runner's failure signature (kiln_verify_result.signature) */
  int64_t count;       /* graphs that failed with it */
  char *dir;           /* the name of its case folder in the campaign folder */
  int64_t first_graph; /* the campaign index j of the first graph that failed with it */
  char *origin;        /* the folder that holds dir (set by _read; not in the file) */
} kiln_fuzz_failure;

typedef struct kiln_fuzz_cell {
  char *key; /* opaque ("op:Conv|auto_pad=SAME_UPPER|f32") */
  int64_t count;
} kiln_fuzz_cell;

typedef struct kiln_fuzz_summary {
  uint64_t seed;
  int64_t shard, shards;   /* this run is shard i of N (0 of 1 unsharded; -1 of N merged) */
  KILN_VEC(int64_t) parts; /* the shard indices summed in, increasing */
  double seconds;          /* campaign time, summed over the parts */
  int64_t tried, valid, invalid, no_inputs, runner_errors, compiled;
  KILN_VEC(kiln_fuzz_failure) failures;
  KILN_VEC(kiln_fuzz_cell) cells;
  uint8_t *edges;          /* NULL or KILN_EDGE_MAP counters (malloc'd) */
  kiln_strmap cell_index_; /* key -> index in cells (add cells with _add_cell) */
} kiln_fuzz_summary;

/* Adds count to the cell key (a new cell when it is not there yet). */
void kiln_fuzz_summary_add_cell(kiln_fuzz_summary *s, const char *key, int64_t count);
/* Adds count graphs to the failure of signature sig; a new one takes dir and first_graph, a
 * known one keeps the earliest first_graph (and its dir and origin). */
void kiln_fuzz_summary_add_failure(kiln_fuzz_summary *s, const char *sig, int64_t count,
                                   const char *dir, int64_t first_graph, const char *origin);
/* Writes s as JSON to path (through a temporary file, renamed). */
KILN_MUST_USE kiln_status kiln_fuzz_summary_write(const char *path, const kiln_fuzz_summary *s);
/* Reads path into *s (zeroed first); each failure's origin is the folder of path. A file that
 * is not this format, or is truncated, is KILN_ERR_INVALID naming the file and the byte. */
KILN_MUST_USE kiln_status kiln_fuzz_summary_read(const char *path, kiln_fuzz_summary *s);
/* Unites src into dst: counts and seconds summed, failures by signature (counts summed,
 * earliest first_graph kept), cells by key (counts summed), edges by maximum. dst zeroed is
 * the empty summary. Refused (KILN_ERR_INVALID): another seed or shard count, or a shard that
 * dst already holds. */
KILN_MUST_USE kiln_status kiln_fuzz_summary_merge(kiln_fuzz_summary *dst,
                                                  const kiln_fuzz_summary *src);
/* The summary in the style of the campaign's own: graphs, failures, cells, edges. */
void kiln_fuzz_summary_print(FILE *f, const kiln_fuzz_summary *s);
void kiln_fuzz_summary_free(kiln_fuzz_summary *s);

/* `kiln fuzz --merge DIR... [--out MERGED] [-q]` (fuzz_merge.c); returns the exit status. */
int kiln_fuzz_merge_main(int argc, char **argv);
/* --shard env: writes "i/N" to buf from KILN_SHARD, else Slurm's SLURM_ARRAY_TASK_ID minus
 * SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT, else Kubernetes' JOB_COMPLETION_INDEX of
 * KILN_SHARDS. 0, or 2 after a usage error naming the variables (none set, or bad values). */
int kiln_fuzz_shard_from_env(char *buf, size_t n);

#endif
