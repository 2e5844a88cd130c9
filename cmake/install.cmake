# Install rules: `cmake --install <build> [--prefix P]` puts the module libraries, the public headers
# (include/warpstream only; nothing from src/), the `warpstream` CLI and a relocatable CMake package:
#   find_package(warpstream REQUIRED)  ->  target_link_libraries(app PRIVATE ws::warpstream)
# tests/install_consumer builds and runs a consumer against such an install (ctest install_consumer).
include(CMakePackageConfigHelpers)
set(WS_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/warpstream)

install(TARGETS ${WS_INSTALL_TARGETS} EXPORT warpstreamTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS warpstream RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/warpstream DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(EXPORT warpstreamTargets NAMESPACE ws:: DESTINATION ${WS_CMAKE_INSTALL_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/warpstreamConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/warpstreamConfig.cmake
                              INSTALL_DESTINATION ${WS_CMAKE_INSTALL_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/warpstreamConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/warpstreamConfig.cmake ${PROJECT_BINARY_DIR}/warpstreamConfigVersion.cmake
        DESTINATION ${WS_CMAKE_INSTALL_DIR})
