//! One address's fair share of the connections (`max_connections_per_address`), with clients on
//! two loopback addresses (127.0.0.1 and 127.0.0.2 are both this machine on Linux), and the
//! share of clients behind a trusted reverse proxy, counted by their `X-Forwarded-For`.

mod common;

use std::net::SocketAddr;

use common::{HANG_GUARD, start};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

/// A TCP connection to `relay` from the loopback address `from`.
async fn connect_from(from: &str, relay: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(relay).await.unwrap()
}

/// `GET /healthz` from `from`: the status line and the body.
async fn health_from(from: &str, relay: SocketAddr) -> (String, String) {
    let mut stream = connect_from(from, relay).await;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut raw = String::new();
    tokio::time::timeout(HANG_GUARD, stream.read_to_string(&mut raw)).await.unwrap().unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

#[tokio::test]
async fn an_address_over_its_share_gets_a_429_while_another_gets_in() {
    let relay = start(|config| {
        config.limits.max_connections = 10;
        config.limits.max_connections_per_address = 3;
    })
    .await;
    // Three idle sockets: never a request, yet each counts from accept on.
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(connect_from("127.0.0.1", relay.addr).await);
    }
    let (status, body) = health_from("127.0.0.1", relay.addr).await;
    assert_eq!(status, "HTTP/1.1 429 Too Many Requests");
    assert!(body.contains("your address already has 3 connections open"), "{body}");
    assert!(body.contains("--max-connections-per-address 3"), "{body}");
    // Another address is untouched, for HTTP and for a websocket.
    assert_eq!(health_from("127.0.0.2", relay.addr).await, ("HTTP/1.1 200 OK".into(), "ok".into()));
    let stream = connect_from("127.0.0.2", relay.addr).await;
    let (ws, _) = tokio_tungstenite::client_async(relay.ws_url(), stream).await.unwrap();
    drop(ws);
    // Once the first address lets one go, it is back within its share.
    drop(idle.pop());
    let mut back = None;
    for _ in 0..200 {
        let answer = health_from("127.0.0.1", relay.addr).await;
        if answer.0.contains("200") {
            back = Some(answer);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(back.expect("room within the share again").1, "ok");
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_share() {
    let relay = start(|config| {
        config.limits.max_connections = 20;
        config.limits.max_connections_per_address = 2;
        config.trusted_proxies = vec![[127, 0, 0, 1].into()];
    })
    .await;
    // The proxy's own connections are many clients': not held to one share.
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(connect_from("127.0.0.1", relay.addr).await);
    }
    assert_eq!(health_from("127.0.0.1", relay.addr).await.1, "ok");

    let through_proxy = |client: &'static str| {
        let url = relay.ws_url();
        async move {
            let mut request = url.into_client_request().unwrap();
            // A forged entry first, the proxy's own last.
            let forwarded = format!("192.0.2.77, {client}");
            request.headers_mut().insert("x-forwarded-for", forwarded.parse().unwrap());
            tokio_tungstenite::connect_async(request).await
        }
    };
    let first = through_proxy("203.0.113.5").await.expect("within the share");
    let second = through_proxy("203.0.113.5").await.expect("within the share");
    let refused = through_proxy("203.0.113.5").await.expect_err("over the client's share");
    let tokio_tungstenite::tungstenite::Error::Http(answer) = refused else {
        panic!("expected an HTTP refusal, got {refused:?}")
    };
    assert_eq!(answer.status(), 429);
    let body = String::from_utf8_lossy(answer.body().as_deref().unwrap_or_default()).into_owned();
    assert!(body.contains("2 websockets open"), "{body}");
    // Another client through the same proxy, and the forged address, are not affected.
    let other = through_proxy("203.0.113.6").await.expect("another client's share");
    drop((first, other));
    // The first client's socket closed: its share has room again.
    let mut again = None;
    for _ in 0..200 {
        if let Ok(ws) = through_proxy("203.0.113.5").await {
            again = Some(ws);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(again.is_some(), "room within the share again");
    drop(second);
    let mut client = relay.client().await;
    client.assert_works().await;
}
