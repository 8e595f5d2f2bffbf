/* Tile IR structures and builders. */
#include "tile.h"

#include "base/mutate.h"

#include <assert.h>
#include <math.h>
#include <string.h>

static const struct {
  const char *name;
  int arity;
  char cls;
} top_info[KILN_TOP_COUNT] = {
#define X(name, text, arity, cls) {text, arity, cls},
    KILN_TOPS(X)
#undef X
};

const char *kiln_top_name(kiln_top op) {
  return op < KILN_TOP_COUNT ? top_info[op].name : "?";
}

int kiln_top_arity(kiln_top op) {
  return op < KILN_TOP_COUNT ? top_info[op].arity : 0;
}

char kiln_top_class(kiln_top op) {
  return op < KILN_TOP_COUNT ? top_info[op].cls : 0;
}

kiln_top kiln_top_lookup(const char *name) {
  for (int i = 0; i < KILN_TOP_COUNT; i++)
    if (strcmp(top_info[i].name, name) == 0) return (kiln_top)i;
  return KILN_TOP_COUNT;
}

const char *kiln_loop_kind_name(kiln_loop_kind k) {
  static const char *names[KILN_LOOP_KIND_COUNT] = {"serial",   "parallel", "vector",  "unroll",
                                                    "block.x",  "block.y",  "block.z", "thread.x",
                                                    "thread.y", "thread.z"};
  return k < KILN_LOOP_KIND_COUNT ? names[k] : "?";
}

const char *kiln_tscope_name(kiln_tscope s) {
  static const char *names[KILN_SCOPE_COUNT] = {"global", "shared", "local"};
  return s < KILN_SCOPE_COUNT ? names[s] : "?";
}

bool kiln_tile_arith_type(kiln_dtype t) {
  switch (t) {
  case KILN_BOOL:
  case KILN_I8:
  case KILN_I16:
  case KILN_I32:
  case KILN_I64:
  case KILN_U8:
  case KILN_U16:
  case KILN_U32:
  case KILN_U64:
  case KILN_F16:
  case KILN_BF16:
  case KILN_F32:
  case KILN_F64: return true;
  default: return false;
  }
}

bool kiln_tile_float_type(kiln_dtype t) {
  return t == KILN_F16 || t == KILN_BF16 || t == KILN_F32 || t == KILN_F64;
}

bool kiln_tile_half_type(kiln_dtype t) {
  return t == KILN_F16 || t == KILN_BF16;
}

/* The value of v rounded to float type t (round to nearest even; F64: v itself). */
static double round_to(kiln_dtype t, double v) {
  if (t == KILN_F32) return (double)(float)v;
  if (t == KILN_F16) return (double)kiln_f16_to_f32(kiln_f64_to_f16(v));
  if (t == KILN_BF16) {
    uint16_t h;
    kiln_store_f64(KILN_BF16, &h, 0, v);
    return (double)kiln_bf16_to_f32(h);
  }
  return v;
}

bool kiln_tile_float_exact(kiln_dtype t, double v) {
  return isnan(v) || round_to(t, v) == v;
}

kiln_dtype kiln_top_result(kiln_top op, kiln_dtype t) {
  return kiln_top_class(op) == 'c' ? KILN_BOOL : t;
}

/* ---- modules and kernels ---- */
kiln_tmodule *kiln_tmodule_new(void) {
  kiln_arena *a = kiln_arena_new();
  kiln_tmodule *m = kiln_arena_calloc(a, 1, sizeof *m);
  m->arena = a;
  return m;
}

void kiln_tmodule_free(kiln_tmodule *m) {
  if (m) kiln_arena_free(m->arena);
}

kiln_tkernel *kiln_tkernel_new(kiln_tmodule *m, const char *name) {
  kiln_tkernel *k = kiln_arena_calloc(m->arena, 1, sizeof *k);
  k->name = kiln_arena_strdup(m->arena, name);
  k->origin = "";
  k->module = m;
  kiln_arena_vec_push(m->arena, &m->kernels, k);
  return k;
}

kiln_tkernel *kiln_tmodule_find(const kiln_tmodule *m, const char *name) {
  for (int i = 0; i < m->kernels.len; i++)
    if (strcmp(m->kernels.data[i]->name, name) == 0) return m->kernels.data[i];
  return NULL;
}

char *kiln_tkernel_strdup(kiln_tkernel *k, const char *s) {
  return kiln_arena_strdup(k->module->arena, s);
}

int kiln_tkernel_buf(kiln_tkernel *k, const char *name, kiln_dtype dtype, kiln_tscope scope,
                     int64_t size) {
  kiln_tbuf b = {kiln_tkernel_strdup(k, name), dtype, scope, size, false};
  kiln_arena_vec_push(k->module->arena, &k->bufs, b);
  return k->bufs.len - 1;
}

int kiln_tkernel_param(kiln_tkernel *k, const char *name, kiln_dtype dtype, int64_t size) {
  assert(k->n_params == k->bufs.len && "parameters come before other buffers");
  k->n_params++;
  return kiln_tkernel_buf(k, name, dtype, KILN_SCOPE_GLOBAL, size);
}

int kiln_tkernel_var(kiln_tkernel *k, const char *name, kiln_dtype type) {
  kiln_tvar v = {kiln_tkernel_strdup(k, name), type};
  kiln_arena_vec_push(k->module->arena, &k->vars, v);
  return k->vars.len - 1;
}

/* ---- expressions ---- */
static kiln_texpr *expr_new(kiln_tkernel *k, kiln_texpr_kind kind, kiln_dtype type) {
  kiln_texpr *e = kiln_arena_calloc(k->module->arena, 1, sizeof *e);
  e->kind = kind;
  e->type = type;
  return e;
}

kiln_texpr *kiln_tconst_int(kiln_tkernel *k, kiln_dtype type, int64_t v) {
  kiln_texpr *e = expr_new(k, KILN_TE_INT, type);
  e->i = v;
  return e;
}

kiln_texpr *kiln_tint(kiln_tkernel *k, int64_t v) {
  return kiln_tconst_int(k, KILN_I64, v);
}

kiln_texpr *kiln_tfloat(kiln_tkernel *k, kiln_dtype type, double v) {
  kiln_texpr *e = expr_new(k, KILN_TE_FLOAT, type);
  e->f = isnan(v) ? v : round_to(type, v); /* exact in its type */
  return e;
}

kiln_texpr *kiln_tv(kiln_tkernel *k, int var) {
  assert(var >= 0 && var < k->vars.len);
  kiln_texpr *e = expr_new(k, KILN_TE_VAR, k->vars.data[var].type);
  e->var = var;
  return e;
}

kiln_texpr *kiln_tload(kiln_tkernel *k, int buf, kiln_texpr *index) {
  assert(buf >= 0 && buf < k->bufs.len);
  kiln_texpr *e = expr_new(k, KILN_TE_LOAD, k->bufs.data[buf].dtype);
  e->buf = buf;
  e->index = index;
  return e;
}

kiln_texpr *kiln_tun(kiln_tkernel *k, kiln_top op, kiln_texpr *a) {
  kiln_texpr *e = expr_new(k, KILN_TE_OP, kiln_top_result(op, a->type));
  e->op = op;
  e->args[0] = a;
  return e;
}

kiln_texpr *kiln_tbin(kiln_tkernel *k, kiln_top op, kiln_texpr *a, kiln_texpr *b) {
  kiln_texpr *e = expr_new(k, KILN_TE_OP, kiln_top_result(op, a->type));
  e->op = op;
  e->args[0] = a;
  e->args[1] = b;
  return e;
}

kiln_texpr *kiln_tselect(kiln_tkernel *k, kiln_texpr *c, kiln_texpr *a, kiln_texpr *b) {
  kiln_texpr *e = expr_new(k, KILN_TE_OP, a->type);
  e->op = KILN_TOP_SELECT;
  e->args[0] = c;
  e->args[1] = a;
  e->args[2] = b;
  return e;
}

kiln_texpr *kiln_tmac(kiln_tkernel *k, kiln_texpr *acc, kiln_texpr *a, kiln_texpr *b) {
  kiln_texpr *e = expr_new(k, KILN_TE_OP, acc->type);
  e->op = KILN_TOP_MAC;
  e->args[0] = acc;
  e->args[1] = a;
  e->args[2] = b;
  return e;
}

kiln_texpr *kiln_tcast(kiln_tkernel *k, kiln_dtype type, kiln_texpr *a) {
  if (a->type == type) return a;
  if (KILN_MUTANT(251) && kiln_dtype_size(a->type) == kiln_dtype_size(type))
    return a; /* mutant 251: a cast between types of one size taken as the identity */
  kiln_texpr *e = expr_new(k, KILN_TE_CAST, type);
  e->args[0] = a;
  return e;
}

static bool is_int_const(const kiln_texpr *e, int64_t v) {
  return e->kind == KILN_TE_INT && e->type == KILN_I64 && e->i == v;
}

kiln_texpr *kiln_tadd(kiln_tkernel *k, kiln_texpr *a, kiln_texpr *b) {
  if (is_int_const(a, 0)) return b;
  if (is_int_const(b, 0)) return a;
  if (a->kind == KILN_TE_INT && b->kind == KILN_TE_INT && a->type == KILN_I64 &&
      b->type == KILN_I64)
    return kiln_tint(k, a->i + b->i);
  return kiln_tbin(k, KILN_TOP_ADD, a, b);
}

kiln_texpr *kiln_tmul(kiln_tkernel *k, kiln_texpr *a, int64_t c) {
  if (c == 0) return kiln_tint(k, 0);
  if (c == 1) return a;
  if (a->kind == KILN_TE_INT && a->type == KILN_I64) return kiln_tint(k, a->i * c);
  return kiln_tbin(k, KILN_TOP_MUL, a, kiln_tint(k, c));
}

/* ---- statements ---- */
static kiln_tstmt *stmt_new(kiln_tkernel *k, kiln_tstmt_kind kind) {
  kiln_tstmt *s = kiln_arena_calloc(k->module->arena, 1, sizeof *s);
  s->kind = kind;
  s->var = -1;
  s->buf = -1;
  return s;
}

kiln_tstmt *kiln_tfor(kiln_tkernel *k, int var, kiln_texpr *extent, kiln_loop_kind kind) {
  kiln_tstmt *s = stmt_new(k, KILN_TS_FOR);
  s->var = var;
  s->extent = extent;
  s->loop = kind;
  return s;
}

kiln_tstmt *kiln_tif(kiln_tkernel *k, kiln_texpr *cond) {
  kiln_tstmt *s = stmt_new(k, KILN_TS_IF);
  s->cond = cond;
  return s;
}

kiln_tstmt *kiln_tstore(kiln_tkernel *k, int buf, kiln_texpr *index, kiln_texpr *value) {
  kiln_tstmt *s = stmt_new(k, KILN_TS_STORE);
  s->buf = buf;
  s->index = index;
  s->value = value;
  return s;
}

kiln_tstmt *kiln_tassign(kiln_tkernel *k, int var, kiln_texpr *value) {
  kiln_tstmt *s = stmt_new(k, KILN_TS_ASSIGN);
  s->var = var;
  s->value = value;
  return s;
}

kiln_tstmt *kiln_tbarrier(kiln_tkernel *k) {
  return stmt_new(k, KILN_TS_BARRIER);
}

kiln_tstmt *kiln_tmma_stmt(kiln_tkernel *k, const kiln_tmma *mma) {
  kiln_tstmt *s = stmt_new(k, KILN_TS_MMA);
  s->mma = *mma;
  return s;
}

void kiln_tblock_push(kiln_tkernel *k, kiln_tblock *b, kiln_tstmt *s) {
  kiln_arena_vec_push(k->module->arena, b, s);
}
