// swift-tools-version:6.1
// The benchmarks live in their own package so that the engine's own dependency list stays short:
// building or testing the engine never fetches or compiles the benchmark framework.
import PackageDescription

let package = Package(
    name: "ApplePayBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "ApplePayDecryption", path: ".."),
        .package(url: "https://github.com/ordo-one/malloc-interposer", exact: "1.6.1"),
    ],
    targets: [
        // The headline run: floor, engine throughput, scaling, latency, allocations, stage breakdown.
        .executableTarget(
            name: "applepay-bench",
            dependencies: [
                .product(name: "ApplePayDecryption", package: "ApplePayDecryption"),
                .product(name: "ApplePayTestSupport", package: "ApplePayDecryption"),
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
            ],
            path: "Sources/applepay-bench"
        ),
        // The two EC_v1 floors as plain loops for callgrind (instruction-ratio.sh).
        .executableTarget(
            name: "instruction-floors",
            dependencies: [.product(name: "ApplePayTestSupport", package: "ApplePayDecryption")],
            path: "Sources/instruction-floors"
        ),
        // The multi-buffer figures (crypto_mb on and off, interleaved), the performance and multi-buffer articles.
        .executableTarget(
            name: "multibuffer-bench",
            dependencies: [
                .product(name: "ApplePayDecryption", package: "ApplePayDecryption"),
                .product(name: "ApplePayTestSupport", package: "ApplePayDecryption"),
            ],
            path: "Sources/multibuffer-bench"
        ),
    ]
)
