# SPDX-License-Identifier: Apache-2.0
# Turns the shared GPU model and MIG profile CSVs (data/gpus) into a header of C string literals
# (models_csv[], mig_profiles_csv[]), so a program carries its tables with it (gpusim, the MIG
# planner). Run at build time with -DMODELS=.. -DPROFILES=.. -DOUT=..
function(csv_to_c var file result)
  file(READ "${file}" text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "\n" "\\n\"\n    \"" text "${text}")
  set(${result} "static const char ${var}[] =\n    \"${text}\";\n" PARENT_SCOPE)
endfunction()
csv_to_c(models_csv "${MODELS}" models)
csv_to_c(mig_profiles_csv "${PROFILES}" profiles)
file(WRITE "${OUT}.tmp" "/* Generated from data/gpus by sim/embed_csv.cmake; do not edit. */\n${models}${profiles}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
execute_process(COMMAND ${CMAKE_COMMAND} -E touch_nocreate "${OUT}")
