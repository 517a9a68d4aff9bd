# SPDX-License-Identifier: Apache-2.0
# Tests of src/http, the one HTTP server (the scheduler extender's; tests/k8s.cmake has the
# extender's own test of it against idle, slow, pipelining and smuggling peers).
gs_add_unit_test(test_httpd SOURCES test_httpd.c http_peer.c LIBS gs_http)
