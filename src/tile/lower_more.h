/* Private to lowering: the single-node lowerings of lower_index.c (GatherElements,
 * GatherND, ScatterElements, ScatterND), lower_norm.c (BatchNormalization in inference,
 * Instance/Group/Lp/MeanVariance/RMS normalization, LRN) and lower_misc.c (Shape,
 * Constant, Trilu, CumSum, CumProd, EyeLike, OneHot, Hardmax, Dropout's mask). Each takes
 * a group of one node and returns KILN_ERR_UNSUPPORTED (the reason of the fallback) when
 * it does not handle the node's op or attributes. */
#ifndef KILN_TILE_LOWER_MORE_H
#define KILN_TILE_LOWER_MORE_H

#include "lower_ops.h"

kiln_status kiln_lower_index_node(kiln_lower_ctx *c, const kiln_group *grp);
kiln_status kiln_lower_norm_node(kiln_lower_ctx *c, const kiln_group *grp);
kiln_status kiln_lower_misc_node(kiln_lower_ctx *c, const kiln_group *grp);

/* A loop nest over dims in which every loop is serial (for scatters and running sums,
 * whose iterations depend on each other). */
void kiln_lower_serial_nest(kiln_tkernel *k, kiln_tblock *parent, int rank, const int64_t *dims,
                            const char *prefix, kiln_nest *out);

#endif
