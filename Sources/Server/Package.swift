// swift-tools-version:6.1
// The server side: the decryption service and the Apple Pay on the Web merchant-API client, one package so
// that SwiftNIO and BoringSSL are built once for both. Apart from the engine's package so that the engine's
// dependency list and test graph (run under ASan and TSan) never include Hummingbird, postgres-nio or NIO.
import PackageDescription

let package = Package(
    name: "ApplePayServer",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "applepay-service", targets: ["applepay-service"]),
        .executable(name: "applepay-merchant", targets: ["applepay-merchant"]),
        .library(name: "ApplePayMerchantAPI", targets: ["ApplePayMerchantAPI"]),
    ],
    // Exact versions: a release is rebuilt from its commit alone (.ci/dist); an upgrade is a commit.
    dependencies: [
        .package(name: "ApplePayDecryption", path: "../.."),
        // No traits: the service needs neither swift-configuration nor full Foundation from Hummingbird.
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1", traits: []),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        // The merchant-API client: AsyncHTTPClient over the same NIO and NIOSSL as Hummingbird.
        .package(url: "https://github.com/swift-server/async-http-client.git", exact: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", exact: "2.37.6"),
    ],
    targets: [
        // The decryption service as a library: `buildApplication(_:logger:)`, its controllers, middleware,
        // replay stores and services. The executable runs it; the in-process tests drive its router.
        .target(
            name: "ApplePayService",
            dependencies: [
                "ApplePayMerchantAPI",
                .product(name: "ApplePayDecryption", package: "ApplePayDecryption"),
                // Google's root keys document from --google-root-keys URL (the merchant-API client's HTTP client).
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "ApplePayService",
            resources: [.embedInCode("openapi.yaml")]
        ),
        // The service's executable (POST /v1/decrypt, /v1/decrypt/batch, /v1/merchant-session): options in,
        // `buildApplication`, `runService()`.
        .executableTarget(
            name: "applepay-service",
            dependencies: [
                "ApplePayService",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "applepay-service"
        ),
        // Apple Pay on the Web's merchant API (merchant validation, domains) over mutual TLS.
        .target(
            name: "ApplePayMerchantAPI",
            dependencies: [
                // The engine's secret-file reader and wipe, for the TLS key and passwords.
                .product(name: "ApplePayDecryption", package: "ApplePayDecryption"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "ApplePayMerchantAPI",
            // MerchantAPITests reach internals with @testable, which needs this module compiled for testing in
            // every configuration, so that `swift test -c release` works too and a release build for
            // deployment compiles it exactly as a release test run did.
            swiftSettings: [.unsafeFlags(["-enable-testing"])]
        ),
        // The merchant API from the command line; `applepay-decrypt merchant-session|merchant-domains` run it.
        .executableTarget(
            name: "applepay-merchant",
            dependencies: [
                "ApplePayMerchantAPI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "applepay-merchant"
        ),
        // The HTTP contract in process (HummingbirdTesting drives the application's router), and real
        // processes over real sockets for what only a process shows: the tests start the built service,
        // PostgreSQL and curl.
        .testTarget(
            name: "ServiceTests",
            dependencies: [
                "ApplePayService",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ApplePayDecryption", package: "ApplePayDecryption"),
                .product(name: "ApplePayTestSupport", package: "ApplePayDecryption"),
            ],
            path: "Tests/ServiceTests"
        ),
        // A real HTTPS gateway on loopback (NIO + NIOSSL, client certificates required) and the built
        // applepay-merchant run as a process.
        .testTarget(
            name: "MerchantAPITests",
            dependencies: [
                "ApplePayMerchantAPI",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Tests/MerchantAPITests"
        ),
    ]
)
