# Multi-stage build of the egress-operator image. No Docker engine runs where this project is
# developed, so this file is kept correct by construction: the build stage installs the same
# Debian packages as hack/install-deps.sh's build section and runs the same CMake build.

FROM debian:bookworm AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake ninja-build g++ make pkg-config ca-certificates \
      libboost1.81-dev libssl-dev rapidjson-dev libyaml-cpp-dev prometheus-cpp-dev \
      libspdlog-dev libfmt-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmd ./cmd
COPY pkg ./pkg
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DEGRESS_BUILD_TESTS=OFF \
    && cmake --build /build --target egress-operator \
    && strip /build/cmd/egress-operator/egress-operator

FROM debian:bookworm-slim
# Runtime libraries only (the -dev packages' shared objects).
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libssl3 libyaml-cpp0.7 libprometheus-cpp-core1.0 libspdlog1.10 libfmt9 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/cmd/egress-operator/egress-operator /usr/local/bin/egress-operator
# Non-root, numeric so runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/egress-operator"]
