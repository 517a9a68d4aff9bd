# SPDX-License-Identifier: Apache-2.0
# Where an installed gpushare lives, and the paths compiled into its programs. They follow the
# install prefix chosen at configure time (make PREFIX=/usr ..., or -DCMAKE_INSTALL_PREFIX): the
# shim beside gpushare, and the configuration, /etc/gpushare/gpushare.conf with /usr
# (GNUInstallDirs' rule for /usr), PREFIX/etc/gpushare/gpushare.conf otherwise. The state
# directory (/var/lib/gpushare) and the API socket (/run/gpushare/gpushared.sock) stay where
# systemd puts the service's StateDirectory= and RuntimeDirectory=, whatever the prefix.
include(GNUInstallDirs)

set(GS_INSTALL_PKGLIBDIR "${CMAKE_INSTALL_LIBDIR}/gpushare")          # shim, Slurm plugin
set(GS_INSTALL_SIMDIR "${CMAKE_INSTALL_LIBEXECDIR}/gpushare/sim")     # gpusim (its own package)
set(GS_CONFIG_PATH "${CMAKE_INSTALL_FULL_SYSCONFDIR}/gpushare/gpushare.conf")
set(GS_STATE_DIR "/var/lib/gpushare")
# The shim as gpushare finds it from its own directory, so an installed tree can move (DESTDIR).
file(RELATIVE_PATH GS_SHIM_FROM_BINDIR "${CMAKE_INSTALL_FULL_BINDIR}"
     "${CMAKE_INSTALL_FULL_LIBDIR}/gpushare/libgpushare.so")
# gpushared as gpushare doctor finds it (to read the configuration with gpushared --check-config).
file(RELATIVE_PATH GS_SBIN_FROM_BINDIR "${CMAKE_INSTALL_FULL_BINDIR}"
     "${CMAKE_INSTALL_FULL_SBINDIR}/gpushared")
file(RELATIVE_PATH GS_SIM_FROM_BINDIR "${CMAKE_INSTALL_FULL_BINDIR}"
     "${CMAKE_INSTALL_FULL_LIBEXECDIR}/gpushare/sim")

# The CUDA version of the cuda.h the shim is compiled against (gpushare doctor compares it with
# the driver's).
file(STRINGS "${CUDA_INCLUDE_DIR}/cuda.h" GS_CUDA_VERSION_LINE REGEX "^#define CUDA_VERSION [0-9]+")
string(REGEX REPLACE "^#define CUDA_VERSION ([0-9]+).*" "\\1" GS_CUDA_VERSION "${GS_CUDA_VERSION_LINE}")
