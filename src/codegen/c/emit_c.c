/* Tile IR -> C11: the prelude, one function per kernel, and the register-tile MMA
 * microkernel (see codegen.h for the contract). */
#include <stdlib.h>
#include <string.h>

#include "base/mutate.h"
#include "codegen/render.h"

kiln_codegen_opts kiln_codegen_opts_default(void) {
  kiln_codegen_opts o = {KILN_ISA_NATIVE, true, 0, false, ""};
  return o;
}

static const char c_prelude_head[] =
    "#include <math.h>\n"
    "#include <stdint.h>\n"
    "#include <string.h>\n"
    "/* The one vector instruction the kernels name, fused multiply-add, is taken from the\n"
    " * compiler's builtin when it has one: <immintrin.h> costs a C compiler most of the time\n"
    " * it takes on a unit (with -march=native on AVX-512, about 0.1 s of 0.14).\n"
    " * KILN_FMA_FROM_HEADER takes the header's intrinsics instead. */\n"
    "#if defined(__x86_64__) && !defined(KILN_GENERIC) && !defined(KILN_FMA_FROM_HEADER) && \\\n"
    "    defined(__has_builtin)\n"
    "#if defined(__AVX512F__) && __has_builtin(__builtin_ia32_vfmaddps512_mask)\n"
    "#define KILN_FMA512_BUILTIN 1\n"
    "#elif !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__) && \\\n"
    "    __has_builtin(__builtin_ia32_vfmaddps256)\n"
    "#define KILN_FMA256_BUILTIN 1\n"
    "#endif\n"
    "#endif\n"
    "#if defined(__x86_64__) && !defined(KILN_GENERIC) && !defined(KILN_FMA512_BUILTIN) && \\\n"
    "    !defined(KILN_FMA256_BUILTIN) &&                                              \\\n"
    "    (defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__)))\n"
    "#include <immintrin.h>\n"
    "#endif\n"
    "\n"
    "#define KILN_FN static inline\n"
    "#define KILN_HOT static inline __attribute__((always_inline))\n"
    "#define KILN_INFF ((float)INFINITY)\n"
    "#define KILN_NANF ((float)NAN)\n"
    "#define KILN_INF ((double)INFINITY)\n"
    "#define KILN_NAN ((double)NAN)\n"
    "#define KILN_PRAGMA(x) _Pragma(#x)\n"
    "#if defined(_OPENMP)\n"
    "#define KILN_SIMD KILN_PRAGMA(omp simd)\n"
    "#elif defined(__GNUC__) && !defined(__clang__)\n"
    "#define KILN_SIMD KILN_PRAGMA(GCC ivdep)\n"
    "#else\n"
    "#define KILN_SIMD\n"
    "#endif\n"
    "#if defined(__clang__)\n"
    "#define KILN_UNROLL(n) KILN_PRAGMA(unroll n)\n"
    "#elif defined(__GNUC__)\n"
    "#define KILN_UNROLL(n) KILN_PRAGMA(GCC unroll n)\n"
    "#else\n"
    "#define KILN_UNROLL(n)\n"
    "#endif\n"
    "KILN_FN uint32_t kiln_f32_bits(float f) {\n"
    "  uint32_t u;\n"
    "  memcpy(&u, &f, 4);\n"
    "  return u;\n"
    "}\n"
    "KILN_FN float kiln_bits_f32(uint32_t u) {\n"
    "  float f;\n"
    "  memcpy(&f, &u, 4);\n"
    "  return f;\n"
    "}\n"
    "\n";

/* 16 floats: one AVX-512 register, two AVX2 registers, or 16 scalar lanes. */
static const char c_prelude_vec[] =
    "\n/* ---- the MMA microkernel's vector: 16 floats ---- */\n"
    "typedef float kiln_vf __attribute__((vector_size(64)));\n"
    "/* Macros, not functions: a 64-byte vector passed by value draws GCC's -Wpsabi note\n"
    " * (which no pragma silences) when the file is built without AVX-512. */\n"
    "#define KILN_VF_LOAD(v, p) memcpy(&(v), (p), sizeof(kiln_vf))\n"
    "#define KILN_VF_STORE(p, v) memcpy((p), &(v), sizeof(kiln_vf))\n"
    "#define KILN_VF_SPLAT(v, x) \\\n"
    "  do { \\\n"
    "    float s_ = (x); \\\n"
    "    (v) = (kiln_vf){s_, s_, s_, s_, s_, s_, s_, s_, s_, s_, s_, s_, s_, s_, s_, s_}; \\\n"
    "  } while (0)\n"
    "/* c = a * b + c rounded once per lane */\n"
    "#if defined(KILN_FMA512_BUILTIN)\n"
    "/* every lane (mask 0xFFFF), the current rounding mode (4) */\n"
    "#define KILN_VF_FMA(c, a, b) \\\n"
    "  ((c) = (kiln_vf)__builtin_ia32_vfmaddps512_mask((a), (b), (c), (unsigned short)0xFFFF, 4))\n"
    "#elif defined(KILN_FMA256_BUILTIN)\n"
    "typedef float kiln_vf8 __attribute__((vector_size(32)));\n"
    "#define KILN_VF_FMA(c, a, b) \\\n"
    "  do { \\\n"
    "    kiln_vf8 h_[6]; \\\n"
    "    memcpy(h_, &(a), 64); \\\n"
    "    memcpy(h_ + 2, &(b), 64); \\\n"
    "    memcpy(h_ + 4, &(c), 64); \\\n"
    "    h_[4] = __builtin_ia32_vfmaddps256(h_[0], h_[2], h_[4]); \\\n"
    "    h_[5] = __builtin_ia32_vfmaddps256(h_[1], h_[3], h_[5]); \\\n"
    "    memcpy(&(c), h_ + 4, 64); \\\n"
    "  } while (0)\n"
    "#elif defined(__x86_64__) && !defined(KILN_GENERIC) && defined(__AVX512F__)\n"
    "#define KILN_VF_FMA(c, a, b) \\\n"
    "  ((c) = (kiln_vf)_mm512_fmadd_ps((__m512)(a), (__m512)(b), (__m512)(c)))\n"
    "#elif defined(__x86_64__) && !defined(KILN_GENERIC) && defined(__AVX2__) && defined(__FMA__)\n"
    "#define KILN_VF_FMA(c, a, b) \\\n"
    "  do { \\\n"
    "    __m256 h_[6]; \\\n"
    "    memcpy(h_, &(a), 64); \\\n"
    "    memcpy(h_ + 2, &(b), 64); \\\n"
    "    memcpy(h_ + 4, &(c), 64); \\\n"
    "    h_[4] = _mm256_fmadd_ps(h_[0], h_[2], h_[4]); \\\n"
    "    h_[5] = _mm256_fmadd_ps(h_[1], h_[3], h_[5]); \\\n"
    "    memcpy(&(c), h_ + 4, 64); \\\n"
    "  } while (0)\n"
    "#else\n"
    "#define KILN_VF_FMA(c, a, b) \\\n"
    "  do { \\\n"
    "    for (int l_ = 0; l_ < 16; l_++) (c)[l_] = fmaf((a)[l_], (b)[l_], (c)[l_]); \\\n"
    "  } while (0)\n"
    "#endif\n\n";

kiln_status kiln_codegen_c_prelude(const kiln_codegen_opts *o, kiln_strbuf *out) {
  static const char *isa[KILN_ISA_COUNT] = {"native", "avx512", "avx2", "generic"};
  if (!o || o->isa < 0 || o->isa >= KILN_ISA_COUNT) return kiln_invalid("bad codegen options");
  kiln_strbuf_printf(out,
                     "/* Generated by Kiln (C backend, isa %s). Build with %s (and -O2 "
                     "-march=native -fPIC -shared [-fopenmp] -lm). */\n",
                     isa[o->isa], KILN_CODEGEN_C_FLAGS);
  if (o->isa == KILN_ISA_GENERIC) kiln_strbuf_printf(out, "#define KILN_GENERIC 1\n");
  const char *inf = strstr(c_prelude_head, "#define KILN_INFF ((float)INFINITY)");
  if (KILN_MUTANT(424) && inf) { /* mutant 424: the f32 infinity defined as the largest float */
    kiln_strbuf_append(out, c_prelude_head, (size_t)(inf - c_prelude_head));
    kiln_strbuf_printf(out, "#define KILN_INFF 0x1.fffffep+127f%s",
                       inf + strlen("#define KILN_INFF ((float)INFINITY)"));
  } else kiln_strbuf_append(out, c_prelude_head, sizeof c_prelude_head - 1);
  kiln_render_helpers(out);
  const char *mask = strstr(c_prelude_vec, "(unsigned short)0xFFFF");
  if (KILN_MUTANT(394) && mask) { /* mutant 394: the 512-bit FMA's lane mask of 8 lanes */
    kiln_strbuf_append(out, c_prelude_vec, (size_t)(mask - c_prelude_vec));
    kiln_strbuf_printf(out, "(unsigned short)0xFF%s", mask + strlen("(unsigned short)0xFFFF"));
  } else kiln_strbuf_append(out, c_prelude_vec, sizeof c_prelude_vec - 1);
  return KILN_OK;
}

/* ---- analysis: where variables and local buffers are declared ----
 * A variable or LOCAL buffer used only inside OpenMP loops (outermost PARALLEL loops) is
 * declared at the top of each such loop's body, so every thread has its own; anything
 * used outside them is declared at the top of the function. */
typedef struct cstate {
  bool *var_top, *buf_top;   /* used outside every omp loop */
  bool *var_seen, *buf_seen; /* scratch: used inside the omp loop being declared */
  int par_depth;
} cstate;

static void mark_expr(const kiln_tkernel *k, const kiln_texpr *e, bool *vars, bool *bufs) {
  if (!e) return;
  if (e->kind == KILN_TE_VAR && e->var >= 0 && e->var < k->vars.len) vars[e->var] = true;
  if (e->kind == KILN_TE_LOAD && e->buf >= 0 && e->buf < k->bufs.len) bufs[e->buf] = true;
  mark_expr(k, e->index, vars, bufs);
  for (int i = 0; i < 3; i++) mark_expr(k, e->args[i], vars, bufs);
}

static void mark_buf(const kiln_tkernel *k, int b, bool *bufs) {
  if (b >= 0 && b < k->bufs.len) bufs[b] = true;
}

/* Marks what stmts of b use; with stop_at_omp, does not enter outermost PARALLEL loops. */
static void mark_block(const kiln_tkernel *k, const kiln_tblock *b, bool stop_at_omp, bool *vars,
                       bool *bufs) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_FOR && stop_at_omp && s->loop == KILN_LOOP_PARALLEL) {
      mark_expr(k, s->extent, vars, bufs);
      continue;
    }
    mark_expr(k, s->extent, vars, bufs);
    mark_expr(k, s->cond, vars, bufs);
    mark_expr(k, s->index, vars, bufs);
    mark_expr(k, s->value, vars, bufs);
    if (s->kind == KILN_TS_ASSIGN && s->var >= 0 && s->var < k->vars.len) vars[s->var] = true;
    if (s->kind == KILN_TS_STORE) mark_buf(k, s->buf, bufs);
    if (s->kind == KILN_TS_MMA && !KILN_MUTANT(241)) { /* mutant 241: MMA operands not marked */
      mark_buf(k, s->mma.a_buf, bufs), mark_buf(k, s->mma.b_buf, bufs);
      mark_buf(k, s->mma.c_buf, bufs);
      mark_expr(k, s->mma.a_off, vars, bufs), mark_expr(k, s->mma.b_off, vars, bufs);
      mark_expr(k, s->mma.c_off, vars, bufs);
    }
    mark_block(k, &s->body, stop_at_omp, vars, bufs);
    if (!KILN_MUTANT(281)) /* mutant 281: an else branch not scanned (what it alone uses) */
      mark_block(k, &s->orelse, stop_at_omp, vars, bufs);
  }
}

static void mark_loop_vars(kiln_render *r, const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_FOR && s->var >= 0 && s->var < r->k->vars.len)
      r->loop_var[s->var] = true;
    mark_loop_vars(r, &s->body);
    mark_loop_vars(r, &s->orelse);
  }
}

static kiln_status declare_buf(kiln_render *r, int b) {
  const kiln_tbuf *buf = &r->k->bufs.data[b];
  int64_t bytes = 0;
  if (buf->size <= 0 ||
      kiln_mul_overflow_i64(buf->size, (int64_t)kiln_dtype_size(buf->dtype), &bytes) ||
      bytes > ((int64_t)1 << 20))
    return kiln_unsupported("kernel '%s': %s buffer '%s' of %lld elements does not fit the stack",
                            r->k->name, kiln_tscope_name(buf->scope), buf->name,
                            (long long)buf->size);
  /* mutant 365: a buffer of 1 KiB or more kept off the stack (static: one copy, shared by the
   * threads of an OpenMP loop) */
  const char *storage = KILN_MUTANT(365) && bytes >= 1024 ? "static " : "";
  kiln_render_line(r, "_Alignas(64) %s%s %s[%lld];", storage, kiln_render_ctype(buf->dtype),
                   r->buf_names[b], (long long)buf->size);
  return KILN_OK;
}

/* Declares the vars and LOCAL buffers in `vars`/`bufs` that are not declared elsewhere. */
static kiln_status declare_locals(kiln_render *r, const bool *vars, const bool *bufs) {
  const kiln_tkernel *k = r->k;
  for (int v = 0; v < k->vars.len; v++)
    if (vars[v] && !r->loop_var[v])
      kiln_render_line(r, "%s %s;", kiln_render_ctype(k->vars.data[v].type), r->var_names[v]);
  for (int b = 0; b < k->bufs.len; b++)
    if (bufs[b] && k->bufs.data[b].scope == KILN_SCOPE_LOCAL) KILN_TRY(declare_buf(r, b));
  return KILN_OK;
}

/* ---- loops ---- */
static kiln_status omp_loop_open(kiln_render *r, const kiln_tstmt *s) {
  cstate *cs = r->user;
  const kiln_tkernel *k = r->k;
  if (r->o->openmp) {
    kiln_strbuf_printf(r->out, "#ifdef _OPENMP\n");
    if (r->o->threads > 0)
      kiln_render_line(r, "#pragma omp parallel for schedule(static) num_threads(%d)",
                       r->o->threads);
    else kiln_render_line(r, "#pragma omp parallel for schedule(static)");
    kiln_strbuf_printf(r->out, "#endif\n");
  }
  KILN_TRY(kiln_render_for_header(r, s));
  r->indent++;
  memset(cs->var_seen, 0, (size_t)k->vars.len * sizeof(bool));
  memset(cs->buf_seen, 0, (size_t)k->bufs.len * sizeof(bool));
  mark_block(k, &s->body, false, cs->var_seen, cs->buf_seen);
  for (int v = 0; v < k->vars.len; v++) cs->var_seen[v] = cs->var_seen[v] && !cs->var_top[v];
  for (int b = 0; b < k->bufs.len; b++) cs->buf_seen[b] = cs->buf_seen[b] && !cs->buf_top[b];
  return declare_locals(r, cs->var_seen, cs->buf_seen);
}

static kiln_status c_loop(kiln_render *r, const kiln_tstmt *s) {
  cstate *cs = r->user;
  bool omp = s->loop == KILN_LOOP_PARALLEL && cs->par_depth == 0;
  if (s->loop >= KILN_LOOP_BLOCK_X && s->loop <= KILN_LOOP_THREAD_Z)
    return kiln_unsupported("kernel '%s': %s loop in the C backend (GPU kernel)", r->k->name,
                            kiln_loop_kind_name(s->loop));
  if (s->loop >= KILN_LOOP_KIND_COUNT)
    return kiln_invalid("kernel '%s': bad loop kind", r->k->name);
  if (s->loop == KILN_LOOP_VECTOR) kiln_render_line(r, "KILN_SIMD");
  if (s->loop == KILN_LOOP_UNROLL) {
    int64_t n = s->extent->kind == KILN_TE_INT ? s->extent->i : 4;
    kiln_render_line(r, "KILN_UNROLL(%lld)", (long long)(n > 16 ? 16 : n < 1 ? 1 : n));
  }
  int64_t ext = s->extent->kind == KILN_TE_INT ? s->extent->i : 0;
  if (KILN_MUTANT(54) && !omp && s->loop == KILN_LOOP_VECTOR && ext > 8 && ext % 8) {
    const char *v = r->var_names[s->var]; /* mutant 54: the remainder of 8 lanes dropped */
    kiln_render_line(r, "for (int64_t %s = 0; %s < %lld; %s++) {", v, v, (long long)(ext & ~7), v);
    r->indent++;
  } else if (omp) {
    KILN_TRY(omp_loop_open(r, s));
  } else {
    KILN_TRY(kiln_render_for_header(r, s));
    r->indent++;
  }
  cs->par_depth += s->loop == KILN_LOOP_PARALLEL;
  kiln_status st = kiln_render_block(r, &s->body);
  cs->par_depth -= s->loop == KILN_LOOP_PARALLEL;
  r->indent--;
  kiln_render_line(r, "}");
  return st;
}

static kiln_status c_barrier(kiln_render *r, const kiln_tstmt *s) {
  (void)s;
  return kiln_unsupported("kernel '%s': barrier in the C backend (GPU kernel)", r->k->name);
}

/* ---- MMA ---- */
bool kiln_codegen_c_mma_fast(const kiln_tkernel *k, const kiln_tmma *m) {
  int bufs[3] = {m->c_buf, m->a_buf, m->b_buf};
  for (int i = 0; i < 3; i++)
    if (bufs[i] < 0 || bufs[i] >= k->bufs.len || k->bufs.data[bufs[i]].dtype != KILN_F32)
      return false;
  return k->bufs.data[m->c_buf].scope == KILN_SCOPE_LOCAL && m->ldc == m->n && m->b_sn == 1 &&
         m->b_sk == m->n && (m->a_sk == 1 || m->a_sm == 1) &&
         (m->n == 16 || m->n == 32 || m->n == 48 || m->n == 64 ||
          (KILN_MUTANT(52) && m->n % 8 == 0 && m->n < 64)) && /* mutant 52: n of 8s */
         m->m >= 1 &&
         m->m <= 8 && m->k >= 1 && m->c_off && m->a_off && m->b_off;
}

/* Defines kiln_mma_f32_MxN once per translation unit (guarded by a macro). */
static void emit_microkernel(kiln_strbuf *o, int m, int n) {
  int nv = n / 16;
  if (KILN_MUTANT(240)) /* mutant 240: the guard macro names the width only */
    kiln_strbuf_printf(o, "#ifndef KILN_MMA_F32_X%d\n#define KILN_MMA_F32_X%d\n", n, n);
  else
    kiln_strbuf_printf(o, "#ifndef KILN_MMA_F32_%dX%d\n#define KILN_MMA_F32_%dX%d\n", m, n, m, n);
  kiln_strbuf_printf(o,
                     "/* c[%dx%d] += a[%d x k] (strides sm, sk) * b[k x %d] (packed panel): the "
                     "tile of c stays in registers */\n",
                     m, n, m, n);
  kiln_strbuf_printf(o,
                     "KILN_HOT void kiln_mma_f32_%dx%d(float *c, const float *a, int64_t sm, "
                     "int64_t sk, const float *b, int64_t kk) {\n",
                     m, n);
  for (int i = 0; i < m; i++) {
    kiln_strbuf_printf(o, "  kiln_vf");
    for (int j = 0; j < nv; j++) kiln_strbuf_printf(o, "%s c%d_%d", j ? "," : "", i, j);
    kiln_strbuf_printf(o, ";\n");
    for (int j = 0; j < nv; j++)
      kiln_strbuf_printf(o, "  KILN_VF_LOAD(c%d_%d, c + %d);\n", i, j, i * n + j * 16);
  }
  kiln_strbuf_printf(o, "  for (int64_t p = 0; p < kk; p++, b += %d) {\n",
                     KILN_MUTANT(183) ? 16 : n); /* mutant 183: B advanced by one vector */
  kiln_strbuf_printf(o, "    kiln_vf");
  for (int j = 0; j < nv; j++) kiln_strbuf_printf(o, "%s b%d", j ? "," : "", j);
  kiln_strbuf_printf(o, ";\n");
  for (int j = 0; j < nv; j++) kiln_strbuf_printf(o, "    KILN_VF_LOAD(b%d, b + %d);\n", j, j * 16);
  for (int i = 0; i < m; i++) {
    kiln_strbuf_printf(o,
                       "    {\n      kiln_vf a%d;\n      KILN_VF_SPLAT(a%d, a[%d * sm + p%s]);\n",
                       i, i, i, KILN_MUTANT(53) ? "" : " * sk"); /* mutant 53: sk taken as 1 */
    for (int j = 0; j < nv; j++)
      kiln_strbuf_printf(o, "      KILN_VF_FMA(c%d_%d, a%d, b%d);\n", i, j, i, j);
    kiln_strbuf_printf(o, "    }\n");
  }
  kiln_strbuf_printf(o, "  }\n");
  for (int i = 0; i < m; i++)
    for (int j = 0; j < nv; j++)
      kiln_strbuf_printf(o, "  KILN_VF_STORE(c + %d, c%d_%d);\n", /* mutant 253: rows 16 apart */
                         (KILN_MUTANT(253) ? i * 16 : i * n) + j * 16, i, j);
  kiln_strbuf_printf(o, "}\n#endif\n");
}

static void emit_microkernels(const kiln_tblock *b, const kiln_tkernel *k, kiln_strbuf *o) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_MMA && kiln_codegen_c_mma_fast(k, &s->mma))
      emit_microkernel(o, (int)s->mma.m, (int)s->mma.n);
    emit_microkernels(&s->body, k, o);
    emit_microkernels(&s->orelse, k, o);
  }
}

static kiln_status c_mma(kiln_render *r, const kiln_tstmt *s) {
  const kiln_tmma *m = &s->mma;
  if (!kiln_codegen_c_mma_fast(r->k, m)) return kiln_render_mma_loops(r, s);
  char *co = NULL, *ao = NULL, *bo = NULL;
  kiln_status st = kiln_render_expr_str(r, m->c_off, true, &co);
  if (!st) st = kiln_render_expr_str(r, m->a_off, true, &ao);
  if (!st) st = kiln_render_expr_str(r, m->b_off, true, &bo);
  if (!st)
    kiln_render_line(r, "kiln_mma_f32_%lldx%lld(%s + %s, %s + %s, %lld, %lld, %s + %s, %lld);",
                     (long long)m->m, (long long)m->n, r->buf_names[m->c_buf], co,
                     r->buf_names[m->a_buf], ao, /* mutant 278: A's strides swapped */
                     (long long)(KILN_MUTANT(278) ? m->a_sk : m->a_sm),
                     (long long)(KILN_MUTANT(278) ? m->a_sm : m->a_sk), r->buf_names[m->b_buf], bo,
                     (long long)m->k);
  free(co), free(ao), free(bo);
  return st;
}

static const kiln_render_target c_target = {false, c_loop, c_barrier, c_mma};

/* ---- kernels ---- */
static void emit_params(kiln_render *r, const bool *used) {
  const kiln_tkernel *k = r->k;
  const char *restr = r->o->restrict_ptrs ? "restrict " : "";
  for (int i = 0; i < k->n_params; i++) {
    const kiln_tbuf *b = &k->bufs.data[i];
    const char *cst = b->readonly ? "const " : "";
    const char *ty = kiln_render_ctype(b->dtype);
    if (!used[i]) {
      kiln_render_line(r, "/* args[%d]: %s (unused) */", i, r->buf_names[i]);
      continue;
    }
    kiln_render_line(r, "%s%s *%s%s = (%s%s *)args[%d];", cst, ty, restr, r->buf_names[i], cst, ty,
                     i);
  }
}

static kiln_status emit_body(kiln_render *r, cstate *cs) {
  const kiln_tkernel *k = r->k;
  mark_loop_vars(r, &k->body);
  mark_block(k, &k->body, !KILN_MUTANT(72), cs->var_top, cs->buf_top); /* mutant 72: shared */
  memset(cs->var_seen, 0, (size_t)k->vars.len * sizeof(bool));
  memset(cs->buf_seen, 0, (size_t)k->bufs.len * sizeof(bool));
  mark_block(k, &k->body, false, cs->var_seen, cs->buf_seen);
  emit_params(r, cs->buf_seen);
  for (int b = k->n_params; b < k->bufs.len; b++)
    if (k->bufs.data[b].scope == KILN_SCOPE_SHARED) KILN_TRY(declare_buf(r, b));
  KILN_TRY(declare_locals(r, cs->var_top, cs->buf_top));
  return kiln_render_block(r, &k->body);
}

static kiln_status check_kernel(const kiln_tkernel *k) {
  if (!k || !k->name || !*k->name) return kiln_invalid("kernel without a name");
  if (k->n_params < 0 || k->n_params > k->bufs.len)
    return kiln_invalid("kernel '%s': bad parameter count", k->name);
  for (int i = 0; i < k->bufs.len; i++) {
    kiln_tscope sc = k->bufs.data[i].scope;
    if ((i < k->n_params) != (sc == KILN_SCOPE_GLOBAL))
      return kiln_invalid("kernel '%s': buffer '%s': parameters are the global buffers", k->name,
                          k->bufs.data[i].name);
  }
  return kiln_render_check_types(k);
}

kiln_status kiln_codegen_c_kernel(const kiln_tkernel *k, const kiln_codegen_opts *o,
                                  kiln_strbuf *out) {
  KILN_TRY(check_kernel(k));
  if (!o) return kiln_invalid("kernel '%s': no codegen options", k->name);
  kiln_render r;
  cstate cs = {0};
  size_t nv = (size_t)k->vars.len + 1, nb = (size_t)k->bufs.len + 1;
  cs.var_top = kiln_xcalloc(nv, 1), cs.var_seen = kiln_xcalloc(nv, 1);
  cs.buf_top = kiln_xcalloc(nb, 1), cs.buf_seen = kiln_xcalloc(nb, 1);
  kiln_strbuf body = {0};
  kiln_render_init(&r, k, o, &c_target, &body);
  r.user = &cs;
  kiln_render_origin(&r);
  kiln_strbuf_printf(&body, "void %s%s(void *const *args) {\n", o->prefix ? o->prefix : "",
                     k->name);
  r.indent = 1;
  kiln_status st = emit_body(&r, &cs);
  kiln_strbuf_printf(&body, "}\n\n");
  if (!st) {
    emit_microkernels(&k->body, k, out);
    kiln_strbuf_append(out, body.data, body.len);
  } else {
    st = kiln_status_annotate(st, "C code of kernel '%s'", k->name);
  }
  kiln_render_free(&r);
  kiln_strbuf_free(&body);
  free(cs.var_top), free(cs.var_seen), free(cs.buf_top), free(cs.buf_seen);
  return st;
}

kiln_status kiln_codegen_c_module(const kiln_tmodule *m, const kiln_codegen_opts *o,
                                  kiln_strbuf *out) {
  KILN_TRY(kiln_codegen_c_prelude(o, out));
  for (int i = 0; i < m->kernels.len; i++)
    KILN_TRY(kiln_codegen_c_kernel(m->kernels.data[i], o, out));
  return KILN_OK;
}
