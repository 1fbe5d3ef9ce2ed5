# SPDX-License-Identifier: Apache-2.0
# Debian packages through CPack: `cpack -G DEB` in a build configured for
# /usr (scripts/build_debs.sh does both; docs/releases.md says what each
# package holds and how they are tested).
#
# Every install() rule in CMakeLists.txt names one of four components, and
# each component is one package:
#   libmlos0     libmlos.so.0 and its SONAME link
#   libmlos-dev  headers, the libmlos.so link, mlos.pc, the CMake package
#   mlosd        the daemon, its unit, config (a conffile), schema, policy
#                host and policies, data-loading helper, docs, mlosd(8)
#   mlos         the CLI, its man pages and completions
# A rule without a component lands in "Unspecified", which no package
# takes: the check at the end warns here, and scripts/build_debs.sh fails.

set(MLOS_DEB_COMPONENTS libmlos0 libmlos-dev mlosd mlos)
set(MLOS_PACKAGE_MAINTAINER "mlOS maintainers <maintainers@users.noreply.a-seed-ff9abedc.example>"
    CACHE STRING "Maintainer field of the Debian packages")
set(MLOS_DEB_RELEASE 1 CACHE STRING "Debian revision of the packages (0.1.0-<this>)")

# Files only the packages carry. EXCLUDE_FROM_ALL: a plain `cmake --install`
# (any prefix, as tests/consumer does) never writes /etc or these docs; CPack
# installs component by component, which includes them.
set(MLOS_DEB_SOURCE_DIR ${PROJECT_SOURCE_DIR}/packaging/debian-cpack)
set(MLOS_DEB_BINARY_DIR ${CMAKE_BINARY_DIR}/debian-cpack)
if(MLOS_BUILD_DAEMON)
  install(FILES packaging/systemd/mlosd.json DESTINATION /etc/mlos COMPONENT mlosd EXCLUDE_FROM_ALL)
endif()
# Debian's changelog of the packages, one entry pointing at CHANGELOG.md.
# string(TIMESTAMP) honours SOURCE_DATE_EPOCH (scripts/build_debs.sh sets
# it to the commit's time), for reproducible packages.
string(TIMESTAMP MLOS_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(MAKE_DIRECTORY ${MLOS_DEB_BINARY_DIR})
file(WRITE ${MLOS_DEB_BINARY_DIR}/changelog.Debian
  "mlos (${PROJECT_VERSION}-${MLOS_DEB_RELEASE}) unstable; urgency=medium\n\n"
  "  * mlOS ${PROJECT_VERSION}: see CHANGELOG.md in the source, or\n"
  "    /usr/share/doc/libmlos0/changelog.gz.\n\n"
  " -- ${MLOS_PACKAGE_MAINTAINER}  ${MLOS_DEB_DATE}\n")
# gzip -9n: no name or time stamp in the header (Debian policy 12.7).
set(mlos_deb_gzipped ${MLOS_DEB_BINARY_DIR}/changelog.Debian)
if(EXISTS ${PROJECT_SOURCE_DIR}/CHANGELOG.md)  # (an sdist of the Python package has none)
  configure_file(${PROJECT_SOURCE_DIR}/CHANGELOG.md ${MLOS_DEB_BINARY_DIR}/CHANGELOG.md COPYONLY)
  list(APPEND mlos_deb_gzipped ${MLOS_DEB_BINARY_DIR}/CHANGELOG.md)
endif()
foreach(file IN LISTS mlos_deb_gzipped)
  execute_process(COMMAND gzip -9nc ${file} OUTPUT_FILE ${file}.gz RESULT_VARIABLE gzip_status)
  if(NOT gzip_status EQUAL 0)
    message(WARNING "gzip ${file} failed (${gzip_status}): the Debian packages would lack it")
  endif()
endforeach()
foreach(component IN LISTS MLOS_DEB_COMPONENTS)
  install(FILES ${MLOS_DEB_SOURCE_DIR}/copyright ${MLOS_DEB_BINARY_DIR}/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${component} COMPONENT ${component} EXCLUDE_FROM_ALL)
endforeach()
if(EXISTS ${MLOS_DEB_BINARY_DIR}/CHANGELOG.md.gz)
  install(FILES ${MLOS_DEB_BINARY_DIR}/CHANGELOG.md.gz
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/libmlos0 RENAME changelog.gz
          COMPONENT libmlos0 EXCLUDE_FROM_ALL)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mlos)
set(CPACK_PACKAGE_VENDOR "The mlOS authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/debs)
# Install into the staging tree through DESTDIR, so the absolute
# destinations (the unit's directory, /etc/mlos) land in the package and
# never on the machine that builds it. The prefix is the build's: the
# policy, helper and doc paths compiled into mlosd and the unit are its.
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_COMPONENTS_ALL ${MLOS_DEB_COMPONENTS})
set(CPACK_DEB_COMPONENT_INSTALL ON)

set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${MLOS_PACKAGE_MAINTAINER})
set(CPACK_DEBIAN_PACKAGE_RELEASE ${MLOS_DEB_RELEASE})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # name_version-release_arch.deb
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Run-time dependencies from the ELF files (dpkg-shlibdeps), and a shlibs
# file for libmlos0 so that others' packages get theirs the same way.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# RelWithDebInfo's debug information goes to <package>-dbgsym .ddeb files
# beside the packages, which are stripped.
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
# Man pages are compressed in the staged tree (Debian policy 12.1).
set(CPACK_PRE_BUILD_SCRIPTS ${MLOS_DEB_SOURCE_DIR}/compress_man_pages.cmake)
# Control files (maintainer scripts, conffiles) get Debian's permissions
# whatever the checkout's modes.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(MLOS_DEB_VERSION "${PROJECT_VERSION}-${MLOS_DEB_RELEASE}")
set(MLOS_DEB_SAME_LIB "libmlos0 (= ${MLOS_DEB_VERSION})")

set(CPACK_DEBIAN_LIBMLOS0_PACKAGE_NAME libmlos0)
set(CPACK_DEBIAN_LIBMLOS0_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_LIBMLOS0_DESCRIPTION "mlOS Training Workload API - shared library
libmlos implements the published C API of the mlOS Training Workload API:
NUMA- and SMT-aware CPU placement, CPU claims across processes, training
phases as OS priorities, memory-pressure callbacks, durable checkpoints,
collectives, tensor memory pools and data loading. It works embedded, with
no daemon, or through mlosd when that runs.
.
The policy host and the data-loading helper that libmlos starts are in the
mlosd package.")
set(CPACK_DEBIAN_LIBMLOS0_PACKAGE_SUGGESTS mlosd)
# ldconfig through dpkg's trigger. (CPack also writes a postinst and postrm
# calling ldconfig for any package with a library in /usr/lib; lintian's
# maintscript-calls-ldconfig warning is that, and harmless.)
set(CPACK_DEBIAN_LIBMLOS0_PACKAGE_CONTROL_EXTRA ${MLOS_DEB_SOURCE_DIR}/libmlos0/triggers)

set(CPACK_DEBIAN_LIBMLOS-DEV_PACKAGE_NAME libmlos-dev)
set(CPACK_DEBIAN_LIBMLOS-DEV_PACKAGE_SECTION libdevel)
# mlos.pc names hwloc, zlib and libseccomp in Requires.private.
set(CPACK_DEBIAN_LIBMLOS-DEV_PACKAGE_DEPENDS "${MLOS_DEB_SAME_LIB}, libhwloc-dev, zlib1g-dev, libseccomp-dev")
set(CPACK_COMPONENT_LIBMLOS-DEV_DESCRIPTION "mlOS Training Workload API - development files
The C headers of libmlos (include/mlos, start with mlos/training.h), the
libmlos.so link, the pkg-config file mlos.pc and the CMake package
(find_package(mlos), target mlos::mlos).")

set(CPACK_DEBIAN_MLOSD_PACKAGE_NAME mlosd)
set(CPACK_DEBIAN_MLOSD_PACKAGE_SECTION admin)
# procps: the unit's ExecReload is /bin/kill (not in a minimal Debian).
set(CPACK_DEBIAN_MLOSD_PACKAGE_DEPENDS "${MLOS_DEB_SAME_LIB}, procps")
set(CPACK_DEBIAN_MLOSD_PACKAGE_CONTROL_EXTRA
    "${MLOS_DEB_SOURCE_DIR}/mlosd/postinst;${MLOS_DEB_SOURCE_DIR}/mlosd/prerm;${MLOS_DEB_SOURCE_DIR}/mlosd/postrm;${MLOS_DEB_SOURCE_DIR}/mlosd/conffiles")
set(CPACK_COMPONENT_MLOSD_DESCRIPTION "mlOS node daemon for ML training jobs
mlosd arbitrates CPUs between the training jobs of all users on a node,
gives each job its own cgroup (v1 or v2: cpuset, CPU weight, memory),
turns training phases into CPU weights, keeps a registry that survives a
restart, hosts policy modules in confined processes and serves Prometheus
metrics.
.
The package holds the daemon, its systemd unit (enabled, not started, on
installation), the config /etc/mlos/mlosd.json and its schema, the policy
host with the shipped policies, and the data-loading helper.")

set(CPACK_DEBIAN_MLOS_PACKAGE_NAME mlos)
set(CPACK_DEBIAN_MLOS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_MLOS_PACKAGE_DEPENDS "${MLOS_DEB_SAME_LIB}")
# mlos run chooses between these allocators; a missing one is skipped.
set(CPACK_DEBIAN_MLOS_PACKAGE_RECOMMENDS "libtcmalloc-minimal4, libjemalloc2")
set(CPACK_COMPONENT_MLOS_DESCRIPTION "command-line tools of mlOS for ML training jobs
mlos shows the node's topology as mlOS sees it (mlos topo), the jobs and
CPU claims (mlos status, mlos top), runs a command inside a CPU and memory
allocation (mlos run), and manages mlosd's policy modules (mlos policy).")

# Anything installed outside the four components would be packaged nowhere.
get_cmake_property(mlos_install_components COMPONENTS)
list(REMOVE_ITEM mlos_install_components ${MLOS_DEB_COMPONENTS} python)
if(mlos_install_components)
  message(WARNING "install() rules outside the Debian packages' components (${MLOS_DEB_COMPONENTS}): "
                  "${mlos_install_components}. Give each rule a COMPONENT (cmake/packaging.cmake).")
endif()

include(CPack)
