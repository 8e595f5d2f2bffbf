# Graph passes: golden text-IR tests run in unit.test_passes (tests/passes/*.txt); here the
# pipeline (without fusion) on the exported real models, compared with their expected
# outputs after the reference interpreter runs the optimized graph.
add_executable(model_passes ${CMAKE_SOURCE_DIR}/tests/passes/model_passes.c)
target_link_libraries(model_passes PRIVATE kiln)
if(KILN_MODELS AND EXISTS ${KILN_MODELS})
  add_test(NAME models.passes COMMAND model_passes ${KILN_MODELS})
  set_tests_properties(models.passes PROPERTIES LABELS "models" TIMEOUT 2400)
endif()
# BatchNormalization folding on a model whose BatchNorms are not folded yet (generated with
# onnx, expected output from ONNX Runtime).
if(EXISTS ${CMAKE_SOURCE_DIR}/.venv/bin/python)
  add_test(NAME models.passes_bnfold
           COMMAND sh -c "'${CMAKE_SOURCE_DIR}/.venv/bin/python' '${CMAKE_SOURCE_DIR}/tests/passes/gen_bn_model.py' '${CMAKE_BINARY_DIR}/bn_models' && '$<TARGET_FILE:model_passes>' '${CMAKE_BINARY_DIR}/bn_models' --expect-removed bnfold=3")
  set_tests_properties(models.passes_bnfold PROPERTIES LABELS "models" TIMEOUT 300)
endif()
