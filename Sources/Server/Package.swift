// swift-tools-version:6.1
// The decryption service lives in its own package so that the engine's dependency list and test graph
// (run under ASan and TSan) never include Hummingbird or postgres-nio.
import PackageDescription

let package = Package(
    name: "ApplePayService",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "applepay-service", targets: ["applepay-service"]),
    ],
    dependencies: [
        .package(name: "ApplePayDecryption", path: "../.."),
        // No traits: the service needs neither swift-configuration nor full Foundation from Hummingbird.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0", traits: []),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        // POST /v1/merchant-session: the merchant-API client (AsyncHTTPClient, NIOSSL), at the versions
        // this package already resolves.
        .package(name: "ApplePayMerchant", path: "../applepay-merchant"),
    ],
    targets: [
        .executableTarget(
            name: "applepay-service",
            dependencies: [
                .product(name: "ApplePayDecryption", package: "ApplePayDecryption"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ApplePayMerchantAPI", package: "ApplePayMerchant"),
            ],
            path: "Sources/applepay-service",
            resources: [.embedInCode("openapi.yaml")]
        ),
        // Unique tokens for the load run (Benchmark/load.sh).
        .executableTarget(
            name: "mint-load-tokens",
            dependencies: [
                .product(name: "ApplePayDecryption", package: "ApplePayDecryption"),
                .product(name: "ApplePayTestSupport", package: "ApplePayDecryption"),
            ],
            path: "Sources/mint-load-tokens"
        ),
        // Real processes over real sockets: the tests start the built executable, PostgreSQL and curl.
        .testTarget(
            name: "ServiceTests",
            dependencies: [
                .product(name: "ApplePayDecryption", package: "ApplePayDecryption"),
                .product(name: "ApplePayTestSupport", package: "ApplePayDecryption"),
            ],
            path: "Tests/ServiceTests"
        ),
    ]
)
