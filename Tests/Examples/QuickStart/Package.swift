// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "QuickStart",
    platforms: [.macOS(.v15)],
    dependencies: [
        // This repository cloned beside your package into a folder named ApplePayDecryption.
        .package(path: "../ApplePayDecryption")
    ],
    targets: [
        .executableTarget(
            name: "QuickStart",
            dependencies: [.product(name: "ApplePayDecryption", package: "ApplePayDecryption")])
    ]
)
