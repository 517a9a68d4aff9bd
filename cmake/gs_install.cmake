# SPDX-License-Identifier: Apache-2.0
# Install rules and the Debian packages (make install, make package). Two components:
#   runtime (package gpushare)     gpushared, gpushare, libgpushare.so, spank_gpushare.so, the client
#                                  header, library and pkg-config file, man pages, systemd unit,
#                                  configuration (/etc/gpushare/gpushare.conf, a conffile), the
#                                  copyright file (packaging/copyright), the Grafana dashboard
#                                  and alert rules (DATADIR/gpushare/monitoring), an example
#                                  workload for plan replay (DATADIR/gpushare/traces/example)
#   sim     (package gpushare-sim) gpusim under LIBEXECDIR/gpushare/sim: off every search path, so
#                                  a GPU node never loads it by accident; a test node points
#                                  nvml_library (and LD_LIBRARY_PATH for jobs) at it; its own
#                                  copyright file

install(TARGETS gpushared RUNTIME DESTINATION "${CMAKE_INSTALL_SBINDIR}" COMPONENT runtime)
install(TARGETS gpushare RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT runtime)
install(TARGETS gpushare_shim LIBRARY DESTINATION "${GS_INSTALL_PKGLIBDIR}" COMPONENT runtime)
if(TARGET spank_gpushare)
  install(TARGETS spank_gpushare LIBRARY DESTINATION "${GS_INSTALL_PKGLIBDIR}" COMPONENT runtime)
endif()

# The client API: one static library (the client and the common code it needs), its headers and
# a pkg-config file (pkg-config --cflags --libs gpushare).
add_library(gpushare_client STATIC $<TARGET_OBJECTS:gs_client> $<TARGET_OBJECTS:gs_common>)
set_target_properties(gpushare_client PROPERTIES OUTPUT_NAME gpushare-client
                      ARCHIVE_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/lib")
install(TARGETS gpushare_client ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT runtime)
install(FILES include/gpushare/client.h include/gpushare/error.h include/gpushare/quantity.h
              include/gpushare/gpu_mode.h include/gpushare/gpu_modes.def
              include/gpushare/wire_error.h include/gpushare/wire_errors.def
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/gpushare" COMPONENT runtime)
configure_file(packaging/gpushare.pc.in "${CMAKE_BINARY_DIR}/packaging/gpushare.pc" @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/packaging/gpushare.pc"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig" COMPONENT runtime)

install(FILES docs/man/gpushare.1 DESTINATION "${CMAKE_INSTALL_MANDIR}/man1" COMPONENT runtime)
install(FILES docs/man/gpushared.8 DESTINATION "${CMAKE_INSTALL_MANDIR}/man8" COMPONENT runtime)
configure_file(packaging/gpushared.service.in "${CMAKE_BINARY_DIR}/packaging/gpushared.service" @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/packaging/gpushared.service"
        DESTINATION lib/systemd/system COMPONENT runtime)
install(FILES packaging/gpushare.conf.example DESTINATION "${CMAKE_INSTALL_FULL_SYSCONFDIR}/gpushare"
        RENAME gpushare.conf COMPONENT runtime)
install(FILES packaging/gpushare.conf.example DESTINATION "${CMAKE_INSTALL_DOCDIR}" COMPONENT runtime)
# A workload to try gpushare plan replay on: the project's own synthetic trace (the openb traces
# are not for redistribution, THIRD-PARTY.md).
install(FILES data/traces/example/nodes.csv data/traces/example/pods.csv
        DESTINATION "${CMAKE_INSTALL_DATADIR}/gpushare/traces/example" COMPONENT runtime)
# Monitoring: a Grafana dashboard and Prometheus alert rules for gpushared's series.
install(FILES packaging/monitoring/gpushare-dashboard.json packaging/monitoring/gpushare-alerts.yml
        DESTINATION "${CMAKE_INSTALL_DATADIR}/gpushare/monitoring" COMPONENT runtime)

# Each package's copyright file (Debian's machine-readable format, Debian policy 12.5; it refers to
# /usr/share/common-licenses/Apache-2.0 for the licence's text). The sim component's doc
# directory is the gpushare-sim package's own.
install(FILES packaging/copyright DESTINATION "${CMAKE_INSTALL_DOCDIR}" COMPONENT runtime)
install(FILES packaging/copyright DESTINATION "${CMAKE_INSTALL_DATAROOTDIR}/doc/gpushare-sim"
        COMPONENT sim)

# gpusim: the simulated driver and NVML (with their SONAME links), MPS control and nvidia-smi.
foreach(lib gsim_cuda gsim_nvml)
  if(TARGET ${lib})
    install(TARGETS ${lib} LIBRARY DESTINATION "${GS_INSTALL_SIMDIR}" NAMELINK_SKIP COMPONENT sim)
  endif()
endforeach()
foreach(prog gsim_mps_control gsim_smi)
  if(TARGET ${prog})
    set_target_properties(${prog} PROPERTIES INSTALL_RPATH "\$ORIGIN")
    install(TARGETS ${prog} RUNTIME DESTINATION "${GS_INSTALL_SIMDIR}" COMPONENT sim)
  endif()
endforeach()

# make package: Debian packages gpushare_VERSION_ARCH.deb and gpushare-sim_VERSION_ARCH.deb.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpushare)
set(CPACK_PACKAGE_VENDOR "gpushare")
set(CPACK_PACKAGE_CONTACT "gpushare maintainers <gpushare@localhost>")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGING_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL runtime sim)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME gpushare)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
    "share NVIDIA GPUs with enforced, accounted leases\ngpushared (node daemon), gpushare (CLI), libgpushare.so (the CUDA driver shim jobs preload) and spank_gpushare.so (Slurm plugin). Start with: gpushare doctor.")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
    "${CMAKE_SOURCE_DIR}/packaging/deb/conffiles;${CMAKE_SOURCE_DIR}/packaging/deb/postinst;${CMAKE_SOURCE_DIR}/packaging/deb/prerm;${CMAKE_SOURCE_DIR}/packaging/deb/postrm")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_SIM_PACKAGE_NAME gpushare-sim)
set(CPACK_DEBIAN_SIM_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_SIM_DESCRIPTION
    "gpusim: a simulated NVIDIA driver, NVML, MPS and nvidia-smi for gpushare\nLets gpushared and CUDA driver-API programs run without a GPU, for tests and demos. Installed under /usr/libexec/gpushare/sim, off the library search path, so a GPU node never loads it by accident.")
include(CPack)
