/* The compile options of the public API (include/kiln.h): an opaque kiln_options that owns
 * copies of its strings and becomes a kiln_compile_opts for kiln_model_compile. */
#include <stdlib.h>
#include <string.h>

#include "api.h"

struct kiln_options {
  const kiln_target *target; /* a registered target that runs (NULL: the default) */
  kiln_compile_opts o;
  kiln_dim_binding *dims; /* owned, with owned names */
  char *cache_dir;
};

kiln_status kiln_options_new(kiln_options **out) {
  *out = kiln_xcalloc(1, sizeof **out);
  kiln_compile_opts_init(&(*out)->o);
  return KILN_OK;
}

void kiln_options_free(kiln_options *o) {
  if (!o) return;
  for (int i = 0; i < o->o.n_dims; i++) free((char *)o->dims[i].sym);
  free(o->dims);
  free(o->cache_dir);
  free(o);
}

/* Any registered target by name; a model compiles for one that runs (kiln_target_can_run). */
kiln_status kiln_options_set_target(kiln_options *o, const char *target) {
  if (!target) return kiln_invalid("target: NULL (a target's name: cpu)");
  const kiln_target *t;
  KILN_TRY(kiln_target_lookup(target, &t));
  if (!kiln_target_can_run(t))
    return kiln_unsupported("target '%s': kernels for it are emitted by `kiln compile "
                            "--target %s`, but its runtime is not built yet",
                            t->name, t->name);
  o->target = t;
  return KILN_OK;
}

kiln_status kiln_options_set_threads(kiln_options *o, int threads) {
  if (threads < 0 || threads > 1024)
    return kiln_invalid("threads: %d is out of range (1..1024, or 0 for all cores)", threads);
  o->o.threads = threads;
  return KILN_OK;
}

kiln_status kiln_options_set_dim(kiln_options *o, const char *sym, int64_t value) {
  if (!sym || !*sym) return kiln_invalid("dim: the symbol's name is empty");
  if (value < 0) return kiln_invalid("dim %s: %lld is negative", sym, (long long)value);
  for (int i = 0; i < o->o.n_dims; i++)
    if (!strcmp(o->dims[i].sym, sym)) {
      o->dims[i].value = value;
      return KILN_OK;
    }
  o->dims = realloc(o->dims, (size_t)(o->o.n_dims + 1) * sizeof *o->dims);
  if (!o->dims) abort();
  o->dims[o->o.n_dims++] = (kiln_dim_binding){.sym = kiln_xstrdup(sym), .value = value};
  o->o.dims = o->dims;
  return KILN_OK;
}

kiln_status kiln_options_set_cache_dir(kiln_options *o, const char *dir) {
  free(o->cache_dir);
  o->cache_dir = dir ? kiln_xstrdup(dir) : NULL;
  o->o.cache_dir = o->cache_dir;
  return KILN_OK;
}

kiln_status kiln_options_set_max_memory(kiln_options *o, int64_t bytes) {
  if (bytes < 0) return kiln_invalid("max memory: %lld bytes is negative", (long long)bytes);
  o->o.max_memory = bytes;
  return KILN_OK;
}

kiln_status kiln_model_compile(kiln_model *m, const kiln_options *o) {
  return kiln_model_compile_opts(m, o ? o->target : NULL, o ? &o->o : NULL);
}
