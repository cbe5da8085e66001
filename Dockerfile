# fracpack's image: built on Debian 12, run on Debian 12 slim as non-root.
#
#   docker build -t ghcr.io/fracpack/fracpack:0.1.0 .
#   docker build --build-arg FRACPACK_ARCH=x86-64-v2 -t fracpack:portable .   # pre-Haswell CPUs
#
# The runtime packages are the shared libraries the binary links
# (test/manifests/dockerfile_test.sh checks them against ldd); gRPC and
# protobuf are the node agent's (fracpack node-agent, the same binary).

FROM debian:12 AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libboost1.81-dev nlohmann-json3-dev libyaml-cpp-dev prometheus-cpp-dev libssl-dev libsimdjson-dev \
      libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY scheduling scheduling
COPY k8s k8s
COPY config config
COPY node node
COPY server server
# -march for the image (x86-64-v3: AVX2 kernels for the JSON hot paths).
ARG FRACPACK_ARCH=x86-64-v3
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFRACPACK_ARCH="${FRACPACK_ARCH}" \
      -DFRACPACK_BUILD_TESTS=OFF -DFRACPACK_BUILD_BENCH=OFF \
 && cmake --build build --target fracpack \
 && strip build/fracpack

FROM debian:12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libyaml-cpp0.7 libprometheus-cpp-core1.0 libsimdjson14 libssl3 ca-certificates \
      libgrpc++1.51 libgrpc29 libprotobuf32 libabsl20220623 libc-ares2 libre2-9 zlib1g \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/fracpack /usr/local/bin/fracpack
COPY config/fracpack.yaml /etc/fracpack/fracpack.yaml
# The distroless "nonroot" user; the Deployment runs with a read-only root.
USER 65532:65532
EXPOSE 8888 9090 8890
ENTRYPOINT ["/usr/local/bin/fracpack"]
CMD ["serve", "--config", "/etc/fracpack/fracpack.yaml"]
