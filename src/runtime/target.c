/* The registry of targets: one table, by id. Registering a target is one line here (and its
 * id in lower.h); the CLI, the verifier's layers and the tests iterate this table. */
#include <string.h>

#include "target.h"

static const kiln_target *const TARGETS[KILN_TARGET_COUNT] = {
    [KILN_TARGET_CPU] = &kiln_target_cpu,
    [KILN_TARGET_CUDA] = &kiln_target_cuda,
};
_Static_assert(sizeof TARGETS / sizeof TARGETS[0] == KILN_TARGET_COUNT,
               "one registered target per kiln_target_id");

int kiln_target_count(void) {
  return KILN_TARGET_COUNT;
}

const kiln_target *kiln_target_at(int id) {
  return id >= 0 && id < KILN_TARGET_COUNT ? TARGETS[id] : NULL;
}

const kiln_target *kiln_target_find(const char *name) {
  for (int i = 0; name && i < KILN_TARGET_COUNT; i++)
    if (!strcmp(TARGETS[i]->name, name)) return TARGETS[i];
  return NULL;
}

void kiln_target_names(kiln_strbuf *b, const char *sep, bool runnable_only) {
  int n = 0;
  for (int i = 0; i < KILN_TARGET_COUNT; i++)
    if (!runnable_only || kiln_target_can_run(TARGETS[i]))
      kiln_strbuf_printf(b, "%s%s", n++ ? sep : "", TARGETS[i]->name);
}

kiln_status kiln_target_lookup(const char *name, const kiln_target **out) {
  *out = kiln_target_find(name);
  if (*out) return KILN_OK;
  kiln_strbuf known = {0};
  kiln_target_names(&known, ", ", false);
  kiln_status st = kiln_invalid("unknown target '%s' (%s)", name ? name : "", known.data);
  kiln_strbuf_free(&known);
  return st;
}

const kiln_target *kiln_target_default(void) {
  return TARGETS[KILN_TARGET_CPU];
}

bool kiln_target_can_run(const kiln_target *t) {
  return t && t->run_kernel != NULL;
}

#define REQUIRE(slot)                                                                              \
  if (!t->slot) return KILN_BUG("target '%s': no " #slot " slot", name)

kiln_status kiln_target_check(const kiln_target *t) {
  if (!t) return KILN_BUG("no target");
  const char *name = t->name ? t->name : "?";
  REQUIRE(name);
  if (!t->name[0]) return KILN_BUG("a target with an empty name");
  REQUIRE(summary);
  REQUIRE(fuse_class);
  REQUIRE(sched_defaults);
  REQUIRE(lower_opts);
  REQUIRE(emit);
  REQUIRE(build);
  REQUIRE(report);
  int n_run = !!t->prepare + !!t->arena_alloc + !!t->arena_free + !!t->copy_in + !!t->copy_out +
              !!t->run_kernel;
  if (n_run != 0 && n_run != 6)
    return KILN_BUG("target '%s': %d of the 6 runtime slots (all or none: a target runs, or "
                    "compiles only)",
                    name, n_run);
  return KILN_OK;
}
