# Installing collscope (GNUInstallDirs layout, relative to any prefix) and packaging it (CPack: a Debian package).
#   bin/collscope, bin/collscope-view                    the command and the viewer
#   LIBDIR/collscope/libcollscope-preload.so, ...-nccl-tuner.so   private: collscope finds them relative to bin/
#   libexec/collscope/fusion_trainer                     the demo's sample program
#   include/collscope/tracer/fusion.h                    the C API a job may call
#   LIBDIR/cmake/collscope/                              find_package(collscope): collscope::api, COLLSCOPE_* paths
#   share/collscope/samples/                             search spaces (fusion_trainer/space.yaml, spaces/*.yaml),
#                                                        ddp_trainer/train_ddp.py (the DDP space's job)
#   share/man/man1/collscope.1.gz                        every command's --help, as a man page
#   share/doc/collscope/                                 README and docs/
# The targets install themselves (cli/, tracer/, gui/, samples/); this file adds the rest.
include(CMakePackageConfigHelpers)

set(COLLSCOPE_INSTALL_PRIVATE_LIBDIR ${CMAKE_INSTALL_LIBDIR}/collscope)
set(COLLSCOPE_INSTALL_HELPERDIR ${CMAKE_INSTALL_LIBEXECDIR}/collscope)
set(COLLSCOPE_INSTALL_SAMPLESDIR ${CMAKE_INSTALL_DATADIR}/collscope/samples)
set(COLLSCOPE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/collscope)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/samples/spaces/ DESTINATION ${COLLSCOPE_INSTALL_SAMPLESDIR}/spaces
        FILES_MATCHING PATTERN "*.yaml")
install(PROGRAMS ${PROJECT_SOURCE_DIR}/samples/ddp_trainer/train_ddp.py DESTINATION ${COLLSCOPE_INSTALL_SAMPLESDIR}/ddp_trainer)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})

# Package config: a job's build finds the C API and the tools' paths.
install(EXPORT collscopeTargets NAMESPACE collscope:: DESTINATION ${COLLSCOPE_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/collscopeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/collscopeConfig.cmake INSTALL_DESTINATION ${COLLSCOPE_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_BINDIR COLLSCOPE_INSTALL_PRIVATE_LIBDIR COLLSCOPE_INSTALL_HELPERDIR COLLSCOPE_INSTALL_SAMPLESDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/collscopeConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/collscopeConfig.cmake ${PROJECT_BINARY_DIR}/collscopeConfigVersion.cmake
        DESTINATION ${COLLSCOPE_INSTALL_CMAKEDIR})

# The man page, written from the built commands' --help (one source of truth for the options).
set(collscope_man ${PROJECT_BINARY_DIR}/man/collscope.1.gz)
set(collscope_man_deps collscope)
if(TARGET collscope-view)
  list(APPEND collscope_man_deps collscope-view)
endif()
add_custom_command(OUTPUT ${collscope_man}
  COMMAND ${PROJECT_SOURCE_DIR}/cmake/collscope-man.sh $<TARGET_FILE:collscope> ${collscope_man} ${PROJECT_VERSION}
  DEPENDS ${collscope_man_deps} ${PROJECT_SOURCE_DIR}/cmake/collscope-man.sh
  COMMENT "Writing the collscope(1) man page from --help")
add_custom_target(collscope_man_page ALL DEPENDS ${collscope_man})
install(FILES ${collscope_man} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# `cpack` (or `cmake --build build --target package`): build/collscope_VERSION_ARCH.deb, for /usr.
set(CPACK_PACKAGE_NAME collscope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "collscope maintainers <collscope@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Trace, analyze and tune the collective communication of MPI and NCCL jobs")
set(CPACK_PACKAGE_DESCRIPTION
    "collscope traces the collectives of a multi-GPU or MPI training job (an LD_PRELOAD tracer, one SQLite file per "
    "rank), finds what slows it (stragglers, latency-bound collectives, low bandwidth, hangs), compares runs for CI, "
    "tunes its knobs by Bayesian optimisation, and shows the run in a timeline viewer.")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# Shared libraries from dpkg-shlibdeps; mpirun (the demo, and most jobs one traces) by name.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "openmpi-bin")
include(CPack)
