# ---- Python bindings (python/: the `warpstream` package over include/warpstream) ------------------------
# WS_BUILD_PYTHON: build the nanobind extension `warpstream._warpstream` from python/src. OFF for the plain
# CMake build (CI's build is unchanged); ON when scikit-build-core drives the build (`pip install .`,
# pyproject.toml) or when scripts/test-python.sh adds it to an existing build directory.
# The extension links ws::warpstream (public API only) and, with CUDA, the CUDA runtime for its copies.
# Output: <build>/python/warpstream/ holds the package (the .py files copied from python/warpstream, the
# extension and its .pyi stubs), so PYTHONPATH=<build>/python imports it without installing.
if(DEFINED SKBUILD)
  set(_ws_python_default ON)
else()
  set(_ws_python_default OFF)
endif()
option(WS_BUILD_PYTHON "Build the Python extension (python/, nanobind)" ${_ws_python_default})
if(NOT WS_BUILD_PYTHON)
  return()
endif()

# Development.SABIModule (the stable ABI library) needs CMake >= 3.26; without it nanobind builds a regular
# (version-specific) extension, as it also does on Python < 3.12.
set(_ws_py_components Interpreter Development.Module)
if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.26)
  list(APPEND _ws_py_components OPTIONAL_COMPONENTS Development.SABIModule)
endif()
find_package(Python 3.10 REQUIRED COMPONENTS ${_ws_py_components})
if(NOT nanobind_DIR)
  execute_process(COMMAND ${Python_EXECUTABLE} -m nanobind --cmake_dir
                  OUTPUT_VARIABLE nanobind_DIR OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _ws_nb_rc)
  if(NOT _ws_nb_rc EQUAL 0)
    message(FATAL_ERROR "WS_BUILD_PYTHON: nanobind not found for ${Python_EXECUTABLE} "
                        "(pip install nanobind, or scripts/install-deps.sh and use its venv's python)")
  endif()
endif()
find_package(nanobind CONFIG REQUIRED)

# WS_PYTHON_CUDA: include the CUDA executor and the lanes in the extension (default: when this build has CUDA).
# OFF links the CPU modules only, so in a CUDA build directory only those are recompiled as PIC below
# (scripts/test-python.sh uses OFF unless told otherwise: CI tests the CPU side; GPU tests run on the device).
if(WS_HAVE_CUDA)
  option(WS_PYTHON_CUDA "Python extension: include the CUDA executor and lanes" ON)
else()
  set(WS_PYTHON_CUDA OFF)
endif()
if(WS_PYTHON_CUDA)
  set(_ws_py_links ws_warpstream)
  set(_ws_py_modules ws_core ws_reference ws_io ws_engine_ir ws_engine_cpu ws_flow_host
                     ws_cuda ws_kernels ws_kernels_cutlass ws_engine_cuda ws_lanes ws_flow)
else()
  set(_ws_py_links ws_engine_cpu ws_engine_ir ws_reference ws_io ws_core)
  set(_ws_py_modules ws_core ws_reference ws_io ws_engine_ir ws_engine_cpu)
endif()
message(STATUS "warpstream: Python extension (CUDA ${WS_PYTHON_CUDA}, ${Python_EXECUTABLE})")

# The extension is a shared object: the static module libraries it links must be position-independent.
# (The plain build keeps them non-PIC; this block only runs with WS_BUILD_PYTHON=ON.)
foreach(_ws_t ${_ws_py_modules})
  if(TARGET ${_ws_t})
    set_target_properties(${_ws_t} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  endif()
endforeach()

set(WS_PYTHON_DIR ${PROJECT_BINARY_DIR}/python/warpstream)
# WS_PYTHON_NOSTRIP keeps the symbol table in a Release build (nanobind strips by default) so that a native
# backtrace (WS_NATIVE_BACKTRACE=1) resolves to function names; scripts/device.sh sets it for the python suite.
option(WS_PYTHON_NOSTRIP "Do not strip the Python extension in Release builds" OFF)
if(WS_PYTHON_NOSTRIP)
  nanobind_add_module(_warpstream STABLE_ABI NB_STATIC NOSTRIP python/src/warpstream_ext.cpp)
else()
  nanobind_add_module(_warpstream STABLE_ABI NB_STATIC python/src/warpstream_ext.cpp)
endif()
target_link_libraries(_warpstream PRIVATE ${_ws_py_links})
# Keep our copies of header-only libraries (cudnn-frontend, nlohmann-json, CUTLASS, ...) and of the module libraries
# private to the extension: torch loads libtorch_cuda with RTLD_GLOBAL, and it carries its own cudnn-frontend and
# nlohmann-json. Without these flags our calls to inline (weak, default-visibility) functions of those headers bind
# to torch's versions at load time, and a build of our cuDNN SDPA graph crashed inside torch's copy (device run 13,
# diffusers' LTXPipeline drop-in). --exclude-libs: nothing from the static libraries is exported; -Bsymbolic: what is
# left binds inside the extension.
if(NOT APPLE AND NOT WIN32)
  target_link_options(_warpstream PRIVATE "LINKER:--exclude-libs,ALL" "LINKER:-Bsymbolic")
endif()
target_compile_options(_warpstream PRIVATE ${WS_WARNINGS})
# WS_PY_CUDA (not WS_HAVE_CUDA, which ws_core exports to every consumer) selects the CUDA parts of the source.
target_compile_definitions(_warpstream PRIVATE WS_PY_CUDA=$<BOOL:${WS_PYTHON_CUDA}>)
if(WS_PYTHON_CUDA)
  target_link_libraries(_warpstream PRIVATE CUDA::cudart)
endif()
set_target_properties(_warpstream PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${WS_PYTHON_DIR})

# The pure-Python part of the package, copied next to the extension whenever a file changes (a dependency of
# _warpstream, so building the extension target refreshes it even when the extension itself is current).
file(GLOB _ws_py_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/python/warpstream/*.py)
set(_ws_py_copies)
foreach(_ws_py_src ${_ws_py_sources})
  get_filename_component(_ws_py_name ${_ws_py_src} NAME)
  add_custom_command(OUTPUT ${WS_PYTHON_DIR}/${_ws_py_name}
                     COMMAND ${CMAKE_COMMAND} -E copy ${_ws_py_src} ${WS_PYTHON_DIR}/${_ws_py_name}
                     DEPENDS ${_ws_py_src} COMMENT "python/warpstream/${_ws_py_name} -> ${WS_PYTHON_DIR}")
  list(APPEND _ws_py_copies ${WS_PYTHON_DIR}/${_ws_py_name})
endforeach()
add_custom_target(_warpstream_py DEPENDS ${_ws_py_copies})
add_dependencies(_warpstream _warpstream_py)

# Type stubs from the extension's signatures and docstrings (nanobind's stubgen), at build time.
nanobind_add_stub(_warpstream_stub MODULE warpstream._warpstream OUTPUT ${WS_PYTHON_DIR}/_warpstream.pyi
                  PYTHON_PATH ${PROJECT_BINARY_DIR}/python DEPENDS _warpstream)
file(MAKE_DIRECTORY ${WS_PYTHON_DIR})
file(TOUCH ${WS_PYTHON_DIR}/py.typed)

if(DEFINED SKBUILD)
  # The wheel holds the package only (python/warpstream via pyproject's wheel.packages + these), not the
  # C++ install (libraries, headers, CMake config): pyproject installs the "python" component alone.
  install(TARGETS _warpstream LIBRARY DESTINATION warpstream COMPONENT python)
  install(FILES ${WS_PYTHON_DIR}/_warpstream.pyi ${WS_PYTHON_DIR}/py.typed DESTINATION warpstream COMPONENT python)
endif()
