/*!
The relay's own TLS (`--tls-cert`, `--tls-key`): each accepted connection's handshake, then the
same HTTP and websockets as without TLS, on the same port.

The handshake runs in the connection's own task, within `Config::handshake_timeout`, and is
counted among the open connections from `accept` on, so a client that opens sockets and never
finishes a handshake is bounded like one that never sends its headers. A client that speaks plain
HTTP to the TLS port (someone typed `http://`) gets a plain-HTTP 400 that says to use `https://`,
instead of a reset connection.
*/

use std::io;
use std::time::Duration;

use capelab_tls::ServerTls;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// The first byte of every TLS connection: a handshake record.
const TLS_HANDSHAKE: u8 = 0x16;

/// How a connection's start went.
pub enum Accepted {
    Tls(Box<TlsStream<TcpStream>>),
    /// Plain HTTP on the TLS port: told so, closed.
    PlainHttp,
    /// Timed out, or not TLS at all, or the handshake failed.
    Failed,
}

/// Runs the server's side of the handshake on `stream`, within `wait`.
pub async fn accept(stream: TcpStream, tls: &ServerTls, wait: Duration) -> Accepted {
    let handshake = async {
        let mut first = [0u8; 1];
        if stream.peek(&mut first).await? == 0 {
            return Ok(Accepted::Failed);
        }
        if first[0] != TLS_HANDSHAKE {
            tell_to_use_https(stream).await;
            return Ok(Accepted::PlainHttp);
        }
        let acceptor = TlsAcceptor::from(tls.config.clone());
        Ok::<_, io::Error>(Accepted::Tls(Box::new(acceptor.accept(stream).await?)))
    };
    match timeout(wait, handshake).await {
        Ok(Ok(accepted)) => accepted,
        Ok(Err(_)) | Err(_) => Accepted::Failed,
    }
}

/// The 400 nginx also answers in this case, in our words.
async fn tell_to_use_https(mut stream: TcpStream) {
    let body = "capelab relay: this port speaks HTTPS. Open the same address with https:// \
                instead of http://.\n";
    let _ = write_and_close(&mut stream, &plain_response("400 Bad Request", body, &[])).await;
}

/// A complete HTTP/1.1 answer that closes the connection, with `nosniff` and any `extra` headers
/// (each `name: value`).
pub fn plain_response(status: &str, body: &str, extra: &[String]) -> String {
    let mut response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\n\
         x-content-type-options: nosniff\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for line in extra {
        response.push_str(line);
        response.push_str("\r\n");
    }
    response.push_str("\r\n");
    response.push_str(body);
    response
}

/// Writes `response`, ends the stream, and reads what the client sent meanwhile, so that closing
/// does not reset the answer away.
pub async fn write_and_close<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    response: &str,
) -> io::Result<()> {
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await?;
    let mut sink = [0u8; 1024];
    while stream.read(&mut sink).await? > 0 {}
    Ok(())
}
