#!/usr/bin/env python3
"""html_cdp.py CHROMIUM PAGE.html EXPECTED.json OUTDIR

Drives the HTML report in headless Chromium over the DevTools protocol (a
minimal RFC 6455 websocket client, stdlib only) with real input events:
hovers the first timeline at the peak and reads the tooltip's sites, expands
a truncated stack, zooms the icicle by clicking a frame, searches it by name.
Screenshots (Page.captureScreenshot) of each step go to OUTDIR.

EXPECTED.json is `vramtrace report --json` of the same trace: the tooltip at
the peak must name its largest sites (sites[0..2]) with their bytes, the
search must sum to what the sites holding the searched frame hold. Exits 0
when every check holds, 1 otherwise (each failure printed)."""
import base64
import glob
import hashlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request


class WebSocket:
    """Just enough of RFC 6455 for CDP: text frames, client masking."""

    def __init__(self, url):
        assert url.startswith("ws://")
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
             f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
             "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        resp = b""
        while b"\r\n\r\n" not in resp:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise OSError("websocket handshake: connection closed")
            resp += chunk
        head, self.buf = resp.split(b"\r\n\r\n", 1)
        want = base64.b64encode(hashlib.sha1(
            (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        if b" 101 " not in head.split(b"\r\n")[0] or want.encode() not in head:
            raise OSError("websocket handshake refused: " + head.decode(errors="replace"))

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        if n < 126:
            hdr = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 65536:
            hdr = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            hdr = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        self.sock.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise OSError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(n)
            op = b0 & 0x0F
            if op == 0x8:
                raise OSError("websocket closed by peer")
            if op in (0x9, 0xA):
                continue
            msg += payload
            if b0 & 0x80:
                return msg.decode()


class Page:
    def __init__(self, ws_url):
        self.ws = WebSocket(ws_url)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def mouse(self, kind, x, y):
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                  clickCount=1 if kind != "mouseMoved" else 0)

    def click(self, x, y):
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y)
        self.mouse("mouseReleased", x, y)

    def shot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def center(self, selector):
        """Scrolls the element into view; its center in viewport pixels."""
        return self.js(f"""(function(){{var e=document.querySelector({json.dumps(selector)});
            if(!e)return null;e.scrollIntoView({{block:'center'}});var r=e.getBoundingClientRect();
            return [r.left+r.width/2,r.top+r.height/2];}})()""")


def stop_chromium(proc):
    """Ends chromium and every process it started (its own session: the
    renderer, the crash handler), so that none still writes to the profile
    when the temporary directory is removed (a race that failed CI once:
    "Directory not empty: 'Default'")."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    for _ in range(100):
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def start_chromium(chromium, url, tmp):
    profile = tempfile.mkdtemp(dir=tmp, prefix="profile.")
    log = open(os.path.join(tmp, "chrome-cdp.log"), "w")
    proc = subprocess.Popen(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--remote-debugging-port=0", "--window-size=1200,900",
         f"--user-data-dir={profile}", url],
        stdout=log, stderr=log, start_new_session=True,
        env=dict(os.environ, TMPDIR=tmp))  # its singleton socket's directory: not left in /tmp
    port_file = os.path.join(profile, "DevToolsActivePort")
    for _ in range(300):
        if os.path.exists(port_file) and open(port_file).read().strip():
            break
        if proc.poll() is not None:
            raise RuntimeError("chromium exited early")
        time.sleep(0.1)
    port = int(open(port_file).read().split()[0])
    for _ in range(100):
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        pages = [t for t in targets if t.get("type") == "page" and t["url"].startswith("file:")]
        if pages:
            return proc, pages[0]["webSocketDebuggerUrl"]
        time.sleep(0.1)
    raise RuntimeError("no page target")


def wait_js(page, expr, timeout=10.0):
    """Polls expr in the page until it is truthy (a loaded machine may take a
    while to run the page's handlers and lay it out); its last value."""
    end = time.monotonic() + timeout
    while True:
        v = page.js(expr)
        if v or time.monotonic() > end:
            return v
        time.sleep(0.05)


def fmt(b):
    """The page's fmt() (its script): binary units, two decimals."""
    u, i, x = ["B", "KiB", "MiB", "GiB", "TiB"], 0, float(b)
    while x >= 1024 and i < 4:
        x /= 1024
        i += 1
    return f"{x:.2f} {u[i]}" if i else f"{int(x)} B"


def frame_name(fr):
    return fr.get("function") or fr.get("label") or ""


def run(page, expected, outdir):
    fails = []
    for _ in range(100):
        if page.js("document.readyState") == "complete" and page.js(
                "!!document.getElementById('flamegraph-0-rendered')"):
            break
        time.sleep(0.1)
    page.shot(os.path.join(outdir, "1-opened.png"))
    # the page opens short: folded sections, opened they make it longer
    short = page.js("document.documentElement.scrollHeight")
    full = page.js("""(function(){var d=document.querySelectorAll('details:not([open])');
        d.forEach(function(e){e.open=true});var h=document.documentElement.scrollHeight;
        d.forEach(function(e){e.open=false});return h})()""")
    print(f"page height: {short} px as opened, {full} px with every section and stack open")
    if not short < full:
        fails.append("no folded section: the page does not open shorter than in full")

    # the headline is shown as written: it names APIs and files, which an
    # upper-case style misspelled (it was "CUMEMALLOC ... NUMBA_RANDOM.PY")
    shown = page.js("document.getElementById('verdict').innerText")
    written = page.js("document.getElementById('verdict').textContent")
    print(f"headline: {shown[:80]!r}")
    if shown.split() != written.replace("remedy:", " remedy:").split():
        fails.append(f"the headline is shown as {shown[:80]!r}, written {written[:80]!r}")

    # hover: the pointer just right of the peak dot; the tooltip names the
    # peak's largest sites
    want = [(s, s["bytes"]) for s in expected["sites"][:3]]
    cx = page.center("#timeline-0 circle.peak")
    if not cx:
        return ["no peak dot in timeline-0"]
    tip = None
    for dx in (0.6, 1.0, 1.5, 0.2):
        page.mouse("mouseMoved", cx[0] + dx, cx[1])
        tip = page.js("""(function(){var t=document.getElementById('tooltip-0');
            return {hidden:t.hidden,time:(t.querySelector('.tt-time')||{}).textContent,
            bytes:[].map.call(t.querySelectorAll('.tt-bytes'),function(e){return e.textContent}),
            sites:[].map.call(t.querySelectorAll('li.tt-site'),function(e){return e.textContent})}})()""")
        if tip["sites"] and len(tip["sites"]) == len(want) and all(
                fmt(b) in line for (_, b), line in zip(want, tip["sites"])):
            break
    page.shot(os.path.join(outdir, "2-hover.png"))
    print("tooltip:", json.dumps(tip))
    if tip["hidden"]:
        fails.append("the tooltip stayed hidden on hover")
    if len(tip["sites"]) != len(want):
        fails.append(f"tooltip lists {len(tip['sites'])} sites, the peak has {len(want)} to show")
    for (site, b), line in zip(want, tip["sites"]):
        leaf = frame_name(site["stack"][0]) if site.get("stack") else "(no stack)"
        if leaf not in line or fmt(b) not in line:
            fails.append(f"tooltip site {line!r} is not the peak's {leaf} with {fmt(b)}")
    peak = fmt(expected["totals"]["peak_allocated_bytes"])
    if not any(peak in x for x in tip["bytes"]):
        fails.append(f"tooltip {tip['bytes']} lacks the peak's allocated {peak}")

    # expand a truncated stack (in the sites section, opened first)
    page.js("document.querySelector('details[data-sec=sites]').open=true")
    c = page.center("details.more > summary")
    if not c:
        fails.append("no expandable stack on the page")
    else:
        was = page.js("document.querySelector('details.more').open")
        hidden = page.js("document.querySelector('details.more').getBoundingClientRect().height")
        page.click(*c)
        wait_js(page, "document.querySelector('details.more').open && document.querySelector("
                f"'details.more').getBoundingClientRect().height > {hidden}")
        shown = page.js("document.querySelector('details.more').getBoundingClientRect().height")
        opened = page.js("document.querySelector('details.more').open")
        page.shot(os.path.join(outdir, "3-stack-expanded.png"))
        print(f"stack: height {hidden} -> {shown}, open {was} -> {opened}")
        if was or not opened or not shown > hidden:
            fails.append("clicking '… more frames' did not expand the stack")

    # zoom the icicle: click the frame of the largest site's leaf, narrower
    # than the box before, the box's width after
    leaf = frame_name(expected["sites"][0]["stack"][0]) if expected["sites"][0].get("stack") else ""
    pick = """(function(n){var b=document.getElementById('flamegraph-0').getBoundingClientRect();
        var e=[].filter.call(document.querySelectorAll('#flamegraph-0 div.fg-frame:not(.fg-parent)'),
        function(x){return x.textContent.indexOf(n+' ')==0})[0];
        if(!e)return null;e.id='fg-pick';return e.getBoundingClientRect().width/b.width})(%s)"""
    before = page.js(pick % json.dumps(leaf))
    if before is None:
        fails.append(f"no icicle frame named {leaf!r}")
    else:
        page.click(*page.center("#fg-pick"))
        wait_js(page, "(%s) > 0.98" % (pick % json.dumps(leaf)))
        zoom = page.js("document.getElementById('flamegraph-0').dataset.zoom")
        after = page.js(pick % json.dumps(leaf))
        page.shot(os.path.join(outdir, "4-icicle-zoomed.png"))
        print(f"zoom: clicked {leaf!r}: width {before:.3f} -> {after:.3f} of the box, zoom={zoom!r}")
        if zoom != leaf or not before < 0.95 or not after > 0.98:
            fails.append(f"clicking {leaf!r} did not zoom the icicle on it")

    # search: type the leaf function of the largest site; the status sums the
    # bytes of the sites whose stack holds it
    page.click(*page.center("#flamegraph-0-reset"))
    page.click(*page.center("#flamegraph-0-search"))
    page.call("Input.insertText", text=leaf)
    wait_js(page, "document.getElementById('flamegraph-0-status').textContent.length > 0")
    status = page.js("document.getElementById('flamegraph-0-status').textContent")
    matches = page.js("document.querySelectorAll('#flamegraph-0 div.fg-match').length")
    total = sum(s["bytes"] for s in expected["sites"]
                if any(frame_name(f) and leaf in frame_name(f) for f in s.get("stack", [])))
    page.shot(os.path.join(outdir, "5-icicle-search.png"))
    print(f"search {leaf!r}: {matches} frames highlighted, status {status!r}, expected {fmt(total)}")
    if not leaf or not matches or fmt(total) not in status:
        fails.append(f"search for {leaf!r}: status {status!r} lacks {fmt(total)}")
    return fails


def main():
    chromium, html, expected_path, outdir = sys.argv[1:5]
    os.makedirs(outdir, exist_ok=True)
    for old in glob.glob(os.path.join(outdir, "*.png")):
        os.remove(old)
    expected = json.load(open(expected_path))
    if isinstance(expected, list):
        expected = expected[0]
    with tempfile.TemporaryDirectory(prefix="vtcdp.") as tmp:
        proc, ws = start_chromium(chromium, "file://" + os.path.abspath(html), tmp)
        try:
            page = Page(ws)
            page.call("Page.enable")
            fails = run(page, expected, outdir)
        finally:
            stop_chromium(proc)
    for f in fails:
        print("FAIL:", f)
    print("screenshots in", outdir, sorted(os.listdir(outdir)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
