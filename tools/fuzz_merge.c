/* kiln fuzz --merge: the shards of one campaign united into one summary (fuzz_summary.h), with
 * the case folder of each distinct failure copied next to it; and --shard env, the shard of a
 * job array task from the scheduler's environment. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "fuzz_feedback.h"
#include "fuzz_summary.h"

static const char *const merge_help =
    "usage: kiln fuzz --merge DIR... [--out MERGED] [--report] [-q]\n\n"
    "Unites the campaigns in the folders DIR (each written by 'kiln fuzz --out DIR', usually\n"
    "the shards of one campaign: same --seed, --shard 0/N .. N-1/N) from their DIR/fuzz.json:\n"
    "graph counts summed, failures deduplicated by signature (counts summed, the earliest\n"
    "graph kept), coverage cells united (counts summed), compiler edge maps united (maximum).\n"
    "Prints one summary; a shard merged twice or a folder of another campaign (seed, shard\n"
    "count) is refused.\n\n"
    "  --out MERGED  write MERGED/fuzz.json and copy the case folder of each distinct failure\n"
    "                to MERGED/<name> (replay it with 'kiln verify MERGED/<name>'); without\n"
    "                it nothing is written\n"
    "  --report      also list the cells of the united coverage map never reached\n"
    "  -q            no summary on stdout\n\n"
    "Exit status: 0 no failures, 1 failures (or a file could not be written), 2 bad usage or a\n"
    "missing, malformed or truncated fuzz.json (named in the message).\n";

/* ---- copying a case folder ---- */
static kiln_status copy_tree(const char *from, const char *to, int depth);

static kiln_status copy_entry(const char *from, const char *to, int depth) {
  struct stat st;
  if (lstat(from, &st)) return kiln_system_error("cannot read '%s'", from);
  if (S_ISDIR(st.st_mode)) {
    KILN_TRY(kiln_make_dirs(to));
    return copy_tree(from, to, depth + 1);
  }
  if (!S_ISREG(st.st_mode)) return KILN_OK; /* a case folder holds files and folders only */
  char *data;
  size_t len;
  KILN_TRY(kiln_read_file(from, &data, &len));
  kiln_status s = kiln_write_file(to, data, len);
  free(data);
  return s;
}

/* The files and folders of from into the existing folder to (at most 8 folders deep). */
static kiln_status copy_tree(const char *from, const char *to, int depth) {
  if (depth > 8) return kiln_invalid("'%s': folders nested too deep for a case", from);
  DIR *d = opendir(from);
  if (!d)
    return kiln_error(errno == ENOENT ? KILN_ERR_IO : KILN_ERR_SYSTEM,
                      "cannot read the case folder '%s': %s", from, strerror(errno));
  kiln_status st = KILN_OK;
  struct dirent *e;
  while (!st && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    kiln_strbuf a = {0}, b = {0};
    kiln_strbuf_printf(&a, "%s/%s", from, e->d_name);
    kiln_strbuf_printf(&b, "%s/%s", to, e->d_name);
    st = copy_entry(a.data, b.data, depth);
    kiln_strbuf_free(&a);
    kiln_strbuf_free(&b);
  }
  closedir(d);
  return st;
}

/* Copies origin/dir of each failure to out/dir (as a whole: a temporary folder renamed) and
 * makes out its origin. */
static kiln_status copy_cases(kiln_fuzz_summary *s, const char *out) {
  for (int i = 0; i < s->failures.len; i++) {
    kiln_fuzz_failure *f = &s->failures.data[i];
    kiln_strbuf from = {0}, to = {0};
    kiln_strbuf_printf(&from, "%s/%s", f->origin ? f->origin : ".", f->dir);
    kiln_strbuf_printf(&to, "%s/%s", out, f->dir);
    kiln_status st = KILN_OK;
    if (!kiln_same_file(from.data, to.data)) {
      kiln_dir_writer w;
      st = kiln_dir_begin(to.data, &w);
      if (!st) st = copy_tree(from.data, w.tmp, 0);
      if (!st) st = kiln_dir_commit(&w);
      else if (w.tmp) kiln_dir_abort(&w);
    }
    kiln_strbuf_free(&from);
    kiln_strbuf_free(&to);
    KILN_TRY(st);
    free(f->origin);
    f->origin = kiln_xstrdup(out);
  }
  return KILN_OK;
}

/* ---- the command ---- */
typedef struct merge_args {
  KILN_VEC(const char *) dirs;
  const char *out;
  bool quiet, report;
} merge_args;

/* -1 when the arguments are fine, else the exit status. */
static int parse_merge_args(int argc, char **argv, merge_args *a) {
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return fputs(merge_help, stdout), 0;
    if (!strcmp(argv[i], "--merge")) continue;
    if (!strcmp(argv[i], "-q")) a->quiet = true;
    else if (!strcmp(argv[i], "--report")) a->report = true;
    else if (kiln_cli_opt(argc, argv, &i, "--out", &v)) {
      if (!v || !*v) return kiln_cli_usage("fuzz", "--out needs a folder");
      a->out = v;
    } else if (argv[i][0] == '-')
      return kiln_cli_usage("fuzz",
                            "--merge: unexpected option '%s' (see kiln fuzz --merge "
                            "--help)",
                            argv[i]);
    else kiln_vec_push(&a->dirs, argv[i]);
  }
  if (!a->dirs.len) return kiln_cli_usage("fuzz", "--merge needs one or more campaign folders");
  for (int i = 0; a->out && i < a->dirs.len; i++) /* its fuzz.json would replace a shard's */
    if (kiln_same_file(a->out, a->dirs.data[i]))
      return kiln_cli_usage("fuzz",
                            "--merge: --out '%s' is one of the folders merged; merge into "
                            "a folder of its own",
                            a->out);
  return -1;
}

static kiln_status merge_all(const merge_args *a, kiln_fuzz_summary *all) {
  for (int i = 0; i < a->dirs.len; i++) {
    kiln_strbuf path = {0};
    kiln_strbuf_printf(&path, "%s/fuzz.json", a->dirs.data[i]);
    kiln_fuzz_summary part;
    kiln_status st = kiln_fuzz_summary_read(path.data, &part); /* names the file */
    if (!st && (st = kiln_fuzz_summary_merge(all, &part)))
      st = kiln_status_annotate(st, "'%s'", path.data);
    kiln_fuzz_summary_free(&part); /* also fine after a failed read */
    kiln_strbuf_free(&path);
    KILN_TRY(st);
  }
  return KILN_OK;
}

static kiln_status write_merged(kiln_fuzz_summary *s, const char *out) {
  KILN_TRY(kiln_make_dirs(out));
  KILN_TRY(copy_cases(s, out));
  kiln_strbuf path = {0};
  kiln_strbuf_printf(&path, "%s/fuzz.json", out);
  kiln_status st = kiln_fuzz_summary_write(path.data, s);
  kiln_strbuf_free(&path);
  return st;
}

int kiln_fuzz_merge_main(int argc, char **argv) {
  merge_args a = {0};
  int rc = parse_merge_args(argc, argv, &a);
  kiln_fuzz_summary all = {0};
  kiln_status st = rc < 0 ? merge_all(&a, &all) : KILN_OK;
  if (rc < 0 && !st && a.out) st = write_merged(&all, a.out);
  if (st) rc = kiln_cli_fail("fuzz", st);
  else if (rc < 0) {
    if (!a.quiet) {
      kiln_fuzz_summary_print(stdout, &all);
      kiln_strmap cells = {0}; /* the universe's cells reached by the united campaign */
      for (int i = 0; i < all.cells.len; i++)
        kiln_strmap_put(&cells, all.cells.data[i].key, all.cells.data[i].count);
      fuzz_cells_print(&cells, stdout, a.report);
      kiln_strmap_free(&cells);
    }
    rc = all.failures.len ? 1 : 0;
  }
  kiln_fuzz_summary_free(&all);
  kiln_vec_free(&a.dirs);
  return rc;
}

/* ---- --shard env ---- */
static const char *const shard_vars =
    "KILN_SHARD=i/N, or SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_MIN and "
    "SLURM_ARRAY_TASK_COUNT (a Slurm job array), or JOB_COMPLETION_INDEX with KILN_SHARDS=N "
    "(a Kubernetes Indexed Job)";

/* The integer in environment variable name, in lo..hi; 0 or the exit status. */
static int env_long(const char *name, long lo, long hi, long *out) {
  const char *v = getenv(name);
  if (!v)
    return kiln_cli_usage("fuzz", "--shard env: %s is not set (the shard comes from %s)", name,
                          shard_vars);
  int64_t x;
  kiln_status st = kiln_parse_i64(v, lo, hi, name, &x);
  if (!st) return *out = (long)x, 0;
  kiln_cli_usage("fuzz", "--shard env: %s", kiln_status_message(st));
  kiln_status_free(st);
  return 2;
}

/* Slurm: the task's place in the array. Only arrays of step 1 ("--array=0-7" or "1-8") map
 * onto shards; "0-14:2" is refused. */
static int slurm_shard(long *i, long *n) {
  long id, min, step = 1;
  if (env_long("SLURM_ARRAY_TASK_ID", 0, 100000000, &id) ||
      env_long("SLURM_ARRAY_TASK_MIN", 0, 100000000, &min) ||
      env_long("SLURM_ARRAY_TASK_COUNT", 1, 1000000, n))
    return 2;
  if (getenv("SLURM_ARRAY_TASK_STEP") && env_long("SLURM_ARRAY_TASK_STEP", 1, 100000000, &step))
    return 2;
  if (step != 1)
    return kiln_cli_usage("fuzz",
                          "--shard env: the Slurm array has step %ld; use an array of "
                          "step 1 (--array=0-%ld)",
                          step, *n - 1);
  *i = id - min;
  return 0;
}

int kiln_fuzz_shard_from_env(char *buf, size_t n) {
  long i, count;
  const char *k = getenv("KILN_SHARD");
  if (k) {
    const char *slash = strchr(k, '/');
    char num[32];
    snprintf(num, sizeof num, "%.*s", slash ? (int)(slash - k < 31 ? slash - k : 31) : 0, k);
    int64_t i64, n64;
    kiln_status st = slash ? kiln_parse_i64(slash + 1, 1, 1000000, "KILN_SHARD's N", &n64)
                           : kiln_invalid("KILN_SHARD is '%s', not i/N", k);
    if (!st) st = kiln_parse_i64(num, 0, n64 - 1, "KILN_SHARD's i", &i64);
    if (!st) return snprintf(buf, n, "%lld/%lld", (long long)i64, (long long)n64), 0;
    kiln_cli_usage("fuzz", "--shard env: %s", kiln_status_message(st));
    kiln_status_free(st);
    return 2;
  }
  const char *from = "SLURM_ARRAY_TASK_ID, _MIN and _COUNT";
  if (getenv("SLURM_ARRAY_TASK_ID")) {
    if (slurm_shard(&i, &count)) return 2;
  } else if (getenv("JOB_COMPLETION_INDEX")) {
    from = "JOB_COMPLETION_INDEX and KILN_SHARDS";
    if (env_long("JOB_COMPLETION_INDEX", 0, 999999, &i) ||
        env_long("KILN_SHARDS", 1, 1000000, &count))
      return 2;
  } else return kiln_cli_usage("fuzz", "--shard env: none of %s is set", shard_vars);
  if (i < 0 || i >= count)
    return kiln_cli_usage("fuzz", "--shard env: shard %ld is not in 0..%ld (from %s)", i, count - 1,
                          from);
  snprintf(buf, n, "%ld/%ld", i, count);
  return 0;
}
