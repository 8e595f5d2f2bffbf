/* kiln info MODEL: inputs, outputs, opsets, op histogram, parameter count. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *const info_help =
    "usage: kiln info MODEL [--json]\n\n"
    "Prints the inputs and outputs of MODEL (an .onnx file or a folder holding model.onnx)\n"
    "with their types, the opsets it imports, how many nodes of each operator it has, and its\n"
    "parameter count (elements of its constants). With --json, the same as a JSON object.\n";

typedef struct op_count {
  const char *name;
  int count;
} op_count;

static void count_ops(const kiln_graph *g, op_count *hist, int *n_hist, int64_t *params) {
  for (int i = 0; i < g->values.len; i++)
    if (g->values.data[i].kind == KILN_VALUE_CONST) *params += g->values.data[i].data->numel;
  for (int i = 0; i < g->nodes.len; i++) {
    const kiln_node *n = &g->nodes.data[i];
    int k = 0;
    while (k < *n_hist && strcmp(hist[k].name, n->op_type)) k++;
    if (k == *n_hist) hist[(*n_hist)++] = (op_count){n->op_type, 0};
    hist[k].count++;
    for (int a = 0; a < n->n_attrs; a++) {
      const kiln_attr *at = &n->attrs[a];
      if (at->kind == KILN_ATTR_GRAPH && at->g) count_ops(at->g, hist, n_hist, params);
      for (int s = 0; at->kind == KILN_ATTR_GRAPHS && s < at->n; s++)
        count_ops(at->graphs[s], hist, n_hist, params);
    }
  }
}

static int cmp_count(const void *a, const void *b) {
  const op_count *x = a, *y = b;
  return x->count != y->count ? y->count - x->count : strcmp(x->name, y->name);
}

/* Prints text from the model: as a JSON string body, or as one escaped line for the terminal
 * (a name holding a newline or an escape sequence cannot forge or color a listing). */
static void put(const char *s, bool json) {
  kiln_strbuf b = {0}, line = {0};
  if (json) {
    kiln_esc_json(&b, s);
  } else {
    kiln_esc_line(&line, s);
    kiln_esc_terminal(&b, line.data ? line.data : "");
  }
  fputs(b.data ? b.data : "", stdout);
  kiln_strbuf_free(&b);
  kiln_strbuf_free(&line);
}

/* A name and its padding to 24 columns, for the text listing. */
static void put_padded(const char *s) {
  put(s, false);
  printf("%*s", (int)(strlen(s) < 24 ? 24 - strlen(s) : 0), "");
}

static void print_values(const kiln_graph *g, const int *ids, int n_ids, const char *what,
                         bool json) {
  char buf[256];
  if (!json) printf("%s:\n", what);
  else printf("  \"%s\": [", what);
  for (int i = 0; i < n_ids; i++) {
    const kiln_value *v = &g->values.data[ids[i]];
    kiln_type_str(&v->type, buf, sizeof buf);
    if (json) {
      printf("%s{\"name\": \"", i ? ", " : "");
      put(v->name, true);
      printf("\", \"type\": \"");
      put(buf, true);
      printf("\"}");
    } else {
      printf("  ");
      put_padded(v->name);
      printf(" ");
      put(buf, false);
      printf("\n");
    }
  }
  if (json) printf("],\n");
}

static void print_opsets(const kiln_graph *g, bool json) {
  printf(json ? "  \"opsets\": {" : "opsets:");
  for (int i = 0; i < g->opsets.len; i++) {
    const char *d = g->opsets.data[i].domain[0] ? g->opsets.data[i].domain : "ai.onnx";
    printf("%s", json ? (i ? ", \"" : "\"") : " ");
    put(d, json);
    printf(json ? "\": %lld" : "=%lld", (long long)g->opsets.data[i].version);
  }
}

static void print_ops(const op_count *hist, int n_hist, int n_nodes, bool json) {
  if (json) printf("},\n  \"ops\": {");
  else printf("\nops (%d nodes):\n", n_nodes);
  for (int i = 0; i < n_hist; i++) {
    if (json) {
      printf("%s\"", i ? ", " : "");
      put(hist[i].name, true);
      printf("\": %d", hist[i].count);
    } else {
      printf("  ");
      put_padded(hist[i].name);
      printf(" %d\n", hist[i].count);
    }
  }
}

static void print_info(const char *path, const kiln_graph *g, bool json) {
  op_count *hist = kiln_xcalloc(KILN_OP_COUNT + 64, sizeof *hist);
  int n_hist = 0;
  int64_t params = 0;
  count_ops(g, hist, &n_hist, &params);
  qsort(hist, (size_t)n_hist, sizeof *hist, cmp_count);
  printf(json ? "{\n  \"model\": \"" : "model: ");
  put(path, json);
  if (json) {
    printf("\",\n");
  } else {
    printf("\ngraph: ");
    put(g->name, false);
    printf("  (ir_version %lld)\n", (long long)g->ir_version);
  }
  print_values(g, g->inputs.data, g->inputs.len, "inputs", json);
  print_values(g, g->outputs.data, g->outputs.len, "outputs", json);
  print_opsets(g, json);
  print_ops(hist, n_hist, g->nodes.len, json);
  printf(json ? "},\n  \"parameters\": %lld\n}\n" : "parameters: %lld\n", (long long)params);
  free(hist);
}

int kiln_cmd_info(int argc, char **argv) {
  const char *path = NULL;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    int mrc;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(info_help, stdout);
      fputs(kiln_cli_memory_help, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--json")) json = true;
    else if (kiln_cli_max_memory("info", argc, argv, &i, &mrc)) {
      if (mrc > 0) return mrc;
    } else if (argv[i][0] == '-') return kiln_cli_usage("info", "unknown option '%s'", argv[i]);
    else if (path) return kiln_cli_usage("info", "more than one model given");
    else path = argv[i];
  }
  if (!path) return kiln_cli_usage("info", "no model given");
  kiln_graph *g;
  kiln_status st = kiln_cli_load(path, &g);
  if (st) return kiln_cli_fail("info", st);
  print_info(path, g, json);
  kiln_graph_free(g);
  return 0;
}
