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
        .executable(name: "applepay-decrypt", targets: ["applepay-decrypt"]),
        // The C ABI (Sources/ApplePayC/include/applepay.h) as libapplepay.so.
        .library(name: "applepay", type: .dynamic, targets: ["ApplePayC"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.19"),
    ],
    targets: [
        // OpenSSL 3 libcrypto + libsodium, imported only by the core library.
        .systemLibrary(
            name: "CShims",
            path: "CShims",
            pkgConfig: "libcrypto libsodium",
            providers: [.apt(["libssl-dev", "libsodium-dev"])]
        ),
        .target(
            name: "ApplePayDecryption",
            dependencies: ["CShims"],
            path: "Sources/ApplePayDecryption"
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
            exclude: ["include", "exports.map"],
            // Only the ap_* functions leave the shared library (see exports.map).
            linkerSettings: [.unsafeFlags(["-Xlinker", "--version-script=\(packageDirectory)/Sources/ApplePayC/exports.map"])]
        ),
        .executableTarget(
            name: "make-vectors",
            dependencies: ["ApplePayDecryption"],
            path: "Sources/make-vectors"
        ),
        // Factory tokens for the C ABI's binding tests and benchmark (Tests/CABI/run-tests.sh).
        .executableTarget(
            name: "mint-tokens",
            dependencies: ["ApplePayDecryption"],
            path: "Tests/CABI/mint-tokens"
        ),
        .testTarget(
            name: "ApplePayDecryptionTests",
            dependencies: [
                "ApplePayDecryption", "applepay-decrypt",
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ],
            path: "Tests/ApplePayDecryptionTests"
        ),
    ]
)
