# The egress-gateway-operator image: the operator compiled in a Debian bookworm build stage, run
# in a slim runtime stage as uid 65532 with only the shared libraries its binaries load.
#
# Elsewhere:  docker build .                  (debian:bookworm and debian:bookworm-slim)
# Here:       make image                      (hack/image/build.sh: a debootstrap base, podman)
#
# Build arguments:
#   BASE_IMAGE, RUNTIME_IMAGE   the build and runtime stages' bases (the same Debian release:
#                               the runtime installs the packages the build stage's libraries
#                               came from)
#   DEBIAN_ARCHIVE, DEBIAN_SECURITY_ARCHIVE
#                               apt archives to install from instead of the bases' own sources
#                               (hack/image/apt-install.sh); empty: the bases' sources
#   BINARIES                    "compiled" (default): built from source here; "prebuilt": copied
#                               from the build context `prebuilt-binaries` (a directory made
#                               by hack/image/build.sh --prebuilt: bin/ and runtime-packages)
#   TARGETS                     the programs in the image, each cmd/<name>/<name>
#   CCACHE_DIR                  a ccache directory mounted into the build (podman build -v);
#                               unset or absent: no ccache

ARG BASE_IMAGE=debian:bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim
ARG BINARIES=compiled

# --- build: the compiler and the -dev packages (hack/install-deps.sh's build group, no tests)
FROM ${BASE_IMAGE} AS build
ARG DEBIAN_ARCHIVE=
ARG DEBIAN_SECURITY_ARCHIVE=
# COPY, not a bind mount, wherever a file steers a RUN: podman's layer cache keys a RUN by its
# command, and only a COPY puts the file's content into the key.
COPY hack/image/apt-install.sh /image/
RUN /image/apt-install.sh cmake ninja-build ccache g++ make pkg-config \
      libboost1.81-dev libssl-dev rapidjson-dev libyaml-cpp-dev prometheus-cpp-dev \
      libspdlog-dev libfmt-dev zlib1g-dev libnftables-dev libmnl-dev
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmd ./cmd
COPY pkg ./pkg

# --- compiled: the programs from source, and the runtime packages their libraries come from.
# The data-plane agent (cmd/egw-agent) ships in the same image: the DaemonSet runs it by path.
# RelWithDebInfo (then stripped) is what every test builds and runs; -O3 (Release) also trips
# g++ 12's false -Wrestrict in std::string's operator+ (GCC PR 105329) under -Werror.
FROM build AS compiled
ARG TARGETS="egress-operator egw-agent egw-gateway"
ARG CCACHE_DIR=
COPY hack/image/runtime-packages.sh /image/
RUN if [ -z "$CCACHE_DIR" ] || [ ! -d "$CCACHE_DIR" ]; then \
      unset CCACHE_DIR; export CCACHE_DISABLE=1; \
    fi \
    && cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEGRESS_BUILD_TESTS=OFF \
    && cmake --build /build --target $TARGETS \
    && mkdir -p /out/bin \
    && for t in $TARGETS; do install -s "/build/cmd/$t/$t" /out/bin/; done \
    && /image/runtime-packages.sh /out/bin/* >/out/runtime-packages

# --- prebuilt: the same two outputs, made on a host of the same Debian release (`make
# test-image` reuses the build it tests instead of compiling everything a second time).
FROM scratch AS prebuilt
COPY --from=prebuilt-binaries bin/ /out/bin/
COPY --from=prebuilt-binaries runtime-packages /out/runtime-packages

FROM ${BINARIES} AS binaries

# --- runtime: the bases' minimal system plus the packages runtime-packages listed; no compiler,
# no -dev package (test/image/image_test.sh checks both).
FROM ${RUNTIME_IMAGE} AS runtime
ARG DEBIAN_ARCHIVE=
ARG DEBIAN_SECURITY_ARCHIVE=
COPY --from=binaries /out/runtime-packages /image/runtime-packages
COPY hack/image/apt-install.sh /image/
RUN /image/apt-install.sh $(cat /image/runtime-packages) && rm -r /image
COPY --from=binaries /out/bin/ /usr/local/bin/
# Non-root and numeric, so the kubelet can verify runAsNonRoot without a passwd entry.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/egress-operator"]
