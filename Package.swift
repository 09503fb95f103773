// swift-tools-version:6.1
import Foundation
import PackageDescription

/// Absolute, because the linker does not run in the package directory.
let packageDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path

let package = Package(
    name: "ApplePayDecryption",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ApplePayDecryption", targets: ["ApplePayDecryption"]),
        .library(name: "ApplePayTestSupport", targets: ["ApplePayTestSupport"]),
        .executable(name: "applepay-decrypt", targets: ["applepay-decrypt"]),
        // The C ABI (Sources/ApplePayC/include/applepay.h) as libapplepay.so.
        .library(name: "applepay", type: .dynamic, targets: ["ApplePayC"]),
    ],
    // Exact versions: a release is rebuilt from its commit alone (.ci/dist); an upgrade is a commit.
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", exact: "0.9.20"),
        // `swift package generate-documentation` (.ci/run); a command plugin, linked into no product.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", exact: "1.5.0"),
    ],
    targets: [
        // OpenSSL 3 libcrypto + libsodium, imported only by ApplePayCrypto.
        .systemLibrary(
            name: "CShims",
            path: "CShims",
            pkgConfig: "libcrypto libsodium",
            providers: [.apt(["libssl-dev", "libsodium-dev"])]
        ),
        // One owning type per OpenSSL object, the BER reader, wiped memory: `package` API, no Apple Pay.
        .target(
            name: "ApplePayCrypto",
            dependencies: ["CShims"],
            path: "Sources/ApplePayCrypto"
        ),
        .target(
            name: "ApplePayDecryption",
            dependencies: ["ApplePayCrypto"],
            path: "Sources/ApplePayDecryption"
        ),
        // Test PKI, token factory and benchmark probes: a product of its own, never linked by the engine.
        .target(
            name: "ApplePayTestSupport",
            dependencies: ["ApplePayDecryption", "ApplePayCrypto"],
            path: "Sources/ApplePayTestSupport"
        ),
        .executableTarget(
            name: "applepay-decrypt",
            dependencies: [
                "ApplePayDecryption",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ],
            path: "Sources/applepay-decrypt"
        ),
        // The C ABI over the public API; the header in include/ is hand-written and is the contract.
        .target(
            name: "ApplePayC",
            dependencies: ["ApplePayDecryption"],
            path: "Sources/ApplePayC",
            exclude: ["include", "exports.map", "applepay-uninstalled.pc"],
            // Only the ap_* functions leave the shared library (see exports.map).
            linkerSettings: [
                .unsafeFlags(["-Xlinker", "--version-script=\(packageDirectory)/Sources/ApplePayC/exports.map"])
            ]
        ),
        // The one token minter: a folder of factory tokens (the C ABI's tests, the service's load runs)
        // and `mint-tokens vectors` (Vectors/).
        .executableTarget(
            name: "mint-tokens",
            dependencies: [
                "ApplePayDecryption", "ApplePayTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/mint-tokens"
        ),
        .testTarget(
            name: "ApplePayDecryptionTests",
            dependencies: [
                "ApplePayDecryption", "ApplePayTestSupport", "ApplePayCrypto", "applepay-decrypt",
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ],
            path: "Tests/ApplePayDecryptionTests"
        ),
        .testTarget(
            name: "ApplePayTestSupportTests",
            dependencies: ["ApplePayDecryption", "ApplePayTestSupport"],
            path: "Tests/ApplePayTestSupportTests"
        ),
    ]
)
