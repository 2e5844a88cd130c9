# Source THERE (the device machine), from the repo root, after carrying .debs/:
#   source scripts/lib/device-env.sh   (scripts/lib/device-common.sh does this)
# Unpacks the Debian packages fetched by scripts/device-deps.sh into /tmp/wsdeps (never into /)
# and exports the paths CMake, the compiler and the loader need to find Protobuf, ONNX, PNG,
# JPEG, nlohmann_json, CLI11 and GTest there. Then:
#   cmake -S . -B build-dev -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90
WS_DEPS=${WS_DEPS:-/tmp/wsdeps}
if [ ! -d "$WS_DEPS/usr" ]; then
  mkdir -p "$WS_DEPS"
  for f in .debs/*.deb; do dpkg -x "$f" "$WS_DEPS"; done
fi
WS_LIBDIR="$WS_DEPS/usr/lib/x86_64-linux-gnu"
# zlib1g-dev's libz.so is an absolute link to bookworm's /lib/x86_64-linux-gnu/libz.so.1.2.13; point it
# at the system's libz.so.1 (the device image's own zlib; the carried runtime stays off the loader path).
WS_SYSZ=$(ldconfig -p 2>/dev/null | awk '/libz\.so\.1 .*x86-64/{print $NF; exit}')
[ -e "${WS_SYSZ:-/nonexistent}" ] || WS_SYSZ="$WS_DEPS/lib/x86_64-linux-gnu/libz.so.1"
ln -sfn "$WS_SYSZ" "$WS_LIBDIR/libz.so"
# libssl-dev's libcrypto.so links to bookworm's libcrypto.so.3, which is not carried: point it at the image's
# own libcrypto.so.3 (Python's); without one, CMake finds no OpenSSL and reports say the hash is unavailable.
WS_SYSCRYPTO=$(ldconfig -p 2>/dev/null | awk '/libcrypto\.so\.3 .*x86-64/{print $NF; exit}')
if [ -e "${WS_SYSCRYPTO:-/nonexistent}" ] && [ -d "$WS_DEPS/usr/include/openssl" ]; then
  ln -sfn "$WS_SYSCRYPTO" "$WS_LIBDIR/libcrypto.so"
else
  rm -f "$WS_LIBDIR/libcrypto.so" "$WS_LIBDIR/libssl.so"
fi
# Headers of libjpeg62-turbo-dev live partly under include/x86_64-linux-gnu (jconfig.h).
export CMAKE_PREFIX_PATH="$WS_DEPS/usr:$WS_LIBDIR/cmake:$WS_DEPS/usr/share/cmake${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export CPATH="$WS_DEPS/usr/include:$WS_DEPS/usr/include/x86_64-linux-gnu${CPATH:+:$CPATH}"
export LIBRARY_PATH="$WS_LIBDIR${LIBRARY_PATH:+:$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$WS_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The ONNX node suite is not carried; CMake then only warns.
# cuDNN for the CUDA executor lives in the device image's Python venv (PyPI nvidia-cudnn-cu*): CMake finds
# it through CUDNN_ROOT, and the loader (cuDNN 9 dlopens its sub-libraries) through LD_LIBRARY_PATH.
if [ -z "${CUDNN_ROOT:-}" ]; then
  CUDNN_ROOT=$(python3 -c "import nvidia.cudnn as m, os; print(os.path.dirname(m.__file__) if getattr(m, '__file__', None) else list(m.__path__)[0])" 2>/dev/null || true)
fi
if [ -n "${CUDNN_ROOT:-}" ] && [ -d "$CUDNN_ROOT/lib" ]; then
  export CUDNN_ROOT
  export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:$LD_LIBRARY_PATH"
fi
