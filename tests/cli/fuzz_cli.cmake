# kiln fuzz across processes: --merge of shards run as separate processes (against the
# unsharded campaign, hand-written failures/cells/edges, malformed files) and --shard env
# (KILN_SHARD, Slurm job arrays, Kubernetes Indexed Jobs), and a child that dies naming its
# layer. A few seconds each.
foreach(t fuzz_merge fuzz_shard_env fuzz_crash)
  add_test(NAME cli.${t} COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/test_${t}.sh
                                 $<TARGET_FILE:kiln_cli>)
  set_tests_properties(cli.${t} PROPERTIES LABELS "quick;asan" TIMEOUT 300)
endforeach()
