"""Nuwa server side: WebTransport server, link emulator, content tools."""
