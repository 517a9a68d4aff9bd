# Tests of gpushared, the gpushare CLI and their client API (issue 5).
gs_add_unit_test(test_daemon_config SOURCES test_daemon_config.c LIBS gs_daemon_core)
gs_add_unit_test(test_daemon_model SOURCES test_daemon_model.c LIBS gs_daemon_core)
gs_add_unit_test(test_proto SOURCES test_proto.c LIBS gs_client)
gs_add_fuzz_target(fuzz_request SOURCES fuzz/fuzz_request.c LIBS gs_client
                   CORPUS "${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/request")
gs_add_unit_test(test_daemon_ledger SOURCES test_daemon_ledger.c LIBS gs_daemon_core)
