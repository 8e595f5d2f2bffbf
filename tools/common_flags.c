/* Options that several subcommands share, parsed in one place: --max-memory. */
#include <string.h>

#include "cli.h"

const char *const kiln_cli_memory_help =
    "  --max-memory BYTES  the most host memory Kiln holds at once: tensors (weights,\n"
    "                    interpreter values, folded constants), the compiled arena, large\n"
    "                    scratch buffers; a model that needs more is refused (exit 2) before\n"
    "                    it is allocated. BYTES: 4096, 512M, 8G ... (default: 16G or 3/4 of\n"
    "                    physical memory, whichever is smaller)\n";

bool kiln_cli_max_memory(const char *cmd, int argc, char **argv, int *i, int *rc) {
  const char *v = NULL;
  *rc = -1;
  if (!kiln_cli_opt(argc, argv, i, "--max-memory", &v)) return false;
  int64_t bytes;
  kiln_status st = v ? kiln_parse_bytes(v, (int64_t)1 << 20, INT64_MAX, "--max-memory", &bytes)
                     : kiln_invalid("--max-memory needs a byte count (4096, 512M, 8G ...)");
  if (st) {
    *rc = kiln_cli_usage(cmd, "%s", kiln_status_message(st));
    kiln_status_free(st);
    return true;
  }
  kiln_mem_set_limit(bytes);
  return true;
}
