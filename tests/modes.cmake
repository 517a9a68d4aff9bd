# Tests of GPU modes (issue 11): the MIG planner, gpushared's mps and mig modes, mixed nodes.
gs_add_unit_test(test_mig_plan SOURCES test_mig_plan.c LIBS gs_placement)
