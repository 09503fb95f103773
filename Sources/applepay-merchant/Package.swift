// swift-tools-version:6.1
// The Apple Pay on the Web merchant API client lives in its own package so that the engine, its CLI and
// the test graph CI runs under ASan and TSan never pull in SwiftNIO or BoringSSL. The CLI reaches it by
// running the `applepay-merchant` executable; the service may depend on this package by path.
import PackageDescription

let package = Package(
    name: "ApplePayMerchant",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ApplePayMerchantAPI", targets: ["ApplePayMerchantAPI"]),
        .executable(name: "applepay-merchant", targets: ["applepay-merchant"]),
    ],
    dependencies: [
        // The versions the service package resolves, so that the two can share one build.
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "ApplePayMerchantAPI",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Sources/ApplePayMerchantAPI"
        ),
        .executableTarget(
            name: "applepay-merchant",
            dependencies: [
                "ApplePayMerchantAPI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/applepay-merchant"
        ),
        // A real HTTPS gateway on loopback (NIO + NIOSSL, client certificates required) and the built
        // executable run as a process.
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
