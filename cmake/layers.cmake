# The layers of Kiln and what each may include. One stage = one folder of src/ = one static
# library kiln_<stage>. A stage includes its own headers and those of the stages listed as its
# dependencies (rooted at src/: "graph/graph.h"), never a higher stage, and never another
# stage's private headers (*_internal.h and the names in KILN_PRIVATE_HEADERS). Both the
# compiler (each stage sees only its dependencies' folders on its include path) and
# cmake/check_layers.cmake (run before every build, also catches "../" includes) enforce it.
set(KILN_STAGES base graph ops onnx passes tile lower codegen runtime verify api)
set(KILN_DEPS_base "")
set(KILN_DEPS_graph base)
set(KILN_DEPS_ops base graph)
set(KILN_DEPS_onnx base graph ops)
set(KILN_DEPS_passes base graph ops)
set(KILN_DEPS_tile base)                                  # the tile IR knows no graph
set(KILN_DEPS_lower base graph ops passes tile)
set(KILN_DEPS_codegen base tile)                          # emitters read the tile IR alone
set(KILN_DEPS_runtime base graph ops passes tile lower codegen)
set(KILN_DEPS_verify base graph ops onnx passes tile lower codegen runtime)
set(KILN_DEPS_api base graph ops onnx passes tile lower codegen runtime)
# Headers private to their stage besides *_internal.h (file names).
set(KILN_PRIVATE_HEADERS ew_internal.h lower_ops.h lower_mm.h tile_text.h rt_internal.h
    standalone_internal.h)
