/* Parsing of the pass manager's flags (see pass_flags.h). */
#include <stdint.h>
#include <string.h>

#include "pass_flags.h"

const char *const kiln_cli_pass_flags_help =
    "  --print-after=PASS|all   print the graph (to stderr) after each application of PASS\n"
    "  --time-passes            print a table of the time and changes of each pass\n"
    "  --disable-pass=NAME[,NAME]  skip these passes\n"
    "  --pass-limit=N           run only the first N pass applications (bisection); each\n"
    "                           decision is logged as 'BISECT: [NOT ]running pass (N) NAME'\n"
    "  --verify-each            verify the graph after every pass (always on in debug builds)\n";

/* Every comma-separated name must be a pass ("all" allowed when all_ok). */
static kiln_status check_names(const char *flag, const char *list, bool all_ok) {
  if (!list[0]) return kiln_invalid("%s needs a pass name", flag);
  if (all_ok && !strcmp(list, "all")) return KILN_OK;
  char buf[256];
  for (const char *p = list; *p;) {
    size_t n = strcspn(p, ",");
    snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), p);
    if (!kiln_pass_find(buf)) return kiln_invalid("%s: unknown pass '%s'", flag, buf);
    p += n + (p[n] == ',');
  }
  return KILN_OK;
}

static kiln_status parse_limit(const char *v, int64_t *out) {
  return kiln_parse_i64(v, 0, INT32_MAX, "--pass-limit", out);
}

bool kiln_cli_pass_flag(const char *arg, kiln_pass_opts *o, kiln_status *err) {
  *err = KILN_OK;
  if (!strcmp(arg, "--time-passes")) o->time_passes = true;
  else if (!strcmp(arg, "--verify-each")) o->verify_each = true;
  else if (!strncmp(arg, "--print-after=", 14)) {
    o->print_after = arg + 14;
    *err = check_names("--print-after", o->print_after, true);
  } else if (!strncmp(arg, "--disable-pass=", 15)) {
    o->disable = arg + 15;
    *err = check_names("--disable-pass", o->disable, false);
  } else if (!strncmp(arg, "--pass-limit=", 13)) *err = parse_limit(arg + 13, &o->pass_limit);
  else return false;
  return true;
}
