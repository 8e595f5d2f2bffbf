# Verification (src/verify) through the `kiln` command: `kiln verify` on the exported real
# models (every layer against the double-precision reference; the backend layers checked
# kernel by kernel, since the end-to-end bounds of a deep network are too loose to judge),
# and a short `kiln fuzz` campaign that must find nothing on the unmutated compiler.
set(KILN_VERIFY_CACHE ${CMAKE_BINARY_DIR}/verify-cache)

# bert_tiny and squeezenet1_1 with a layer per pass application (each checked locally
# against the graph before it), mobilenet_v2 with the passes bisected only (faster).
if(KILN_MODELS AND EXISTS ${KILN_MODELS})
  foreach(model bert_tiny squeezenet1_1 mobilenet_v2)
    set(mode "")
    if(model STREQUAL "mobilenet_v2")
      set(mode "--bisect-only")
    endif()
    if(EXISTS ${KILN_MODELS}/${model}/model.onnx)
      # The table must show local checks that ran: "kernels checked locally" and no
      # FAIL/ERROR row (the exit status says the rest).
      add_test(NAME verify.model.${model}
               COMMAND sh -c "'$<TARGET_FILE:kiln_cli>' verify '${KILN_MODELS}/${model}/model.onnx' -q ${mode} > '${CMAKE_BINARY_DIR}/verify-${model}.txt' && grep -q 'kernels checked locally' '${CMAKE_BINARY_DIR}/verify-${model}.txt' && ! grep -qE 'FAIL|ERROR|unchecked' '${CMAKE_BINARY_DIR}/verify-${model}.txt'")
      set_tests_properties(verify.model.${model} PROPERTIES LABELS "models;verify" TIMEOUT 300
                           ENVIRONMENT "KILN_CACHE_DIR=${KILN_VERIFY_CACHE}")
    endif()
  endforeach()
endif()

# 40 random graphs (deterministic by seed): exit 0, nothing found.
add_test(NAME verify.fuzz_smoke
         COMMAND kiln_cli fuzz --count 120 --cpu-every 3 --seed 1 -q --out ${CMAKE_BINARY_DIR}/verify-fuzz-out)
set_tests_properties(verify.fuzz_smoke PROPERTIES LABELS "verify" TIMEOUT 600)
