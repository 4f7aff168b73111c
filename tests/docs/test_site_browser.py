"""The built site in a real headless browser (Debian's chromium +
chromedriver, driven by selenium, as tests/visualize/test_viewer_browser.py
does, with its skip rule: without them the tests skip, saying how to
install them; with `KERAS_ATTENTION_REQUIRE_BROWSER=1` they fail): pages
render, Material's search finds a layer, every image loads and every
internal link answers 200.

The site is served over HTTP (Material's search loads its index with a
web worker, which a file:// page may not start) from a thread."""

import functools
import html.parser
import http.server
import re
import threading
import urllib.error
import urllib.parse
import urllib.request

import pytest

from tests.visualize.test_viewer_browser import browser  # noqa: F401

pytestmark = pytest.mark.usefixtures("browser")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="module")
def site_url(built_site):
    site, build = built_site
    if build["returncode"] != 0:
        pytest.fail(f"the site did not build:\n{build['output'][-3000:]}")
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def pages(built_site, site_url):
    """Every page's URL: each folder's index.html (404.html aside)."""
    site, _ = built_site
    urls = []
    for path in sorted(site.rglob("index.html")):
        folder = path.parent.relative_to(site).as_posix()
        urls.append(site_url if folder == "." else f"{site_url}{folder}/")
    return urls


def _wait(driver, condition, timeout=15):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def _text(driver, selector="article"):
    return driver.execute_script(
        "return document.querySelector(arguments[0]).innerText;", selector)


def test_the_home_page_renders(browser, site_url):  # noqa: F811
    browser.get(site_url)
    assert "keras-attention" in browser.title
    assert "Reusable attention layers for Keras 3" in _text(browser)
    links = browser.execute_script(
        "return Array.from(document.querySelectorAll('nav a'))"
        ".map(a => a.textContent.trim());")
    assert "Getting started" in links and "API reference" in links


def test_a_layer_page_shows_its_signature_docstring_and_example(
        browser, site_url):  # noqa: F811
    browser.get(f"{site_url}api/layers/RelativeAttention/")
    text = _text(browser)
    assert "RelativeAttention(" in text  # the signature
    assert "max_relative_position" in text
    assert "Multi-head self-attention that sees how far apart" in text
    # The runnable example, shown as a Python session, not as quotes.
    assert ">>> from keras_attention.layers import RelativeAttention" in text
    assert browser.execute_script(
        "return document.querySelectorAll('article blockquote').length;") == 0


def test_a_guide_renders_with_its_code(browser, site_url):  # noqa: F811
    browser.get(f"{site_url}layers/")
    assert browser.execute_script(
        "return document.querySelector('article h1').textContent;"
    ).startswith("Layers")
    code = browser.execute_script(
        "return Array.from(document.querySelectorAll('article pre code'))"
        ".map(c => c.textContent).join('\\n');")
    assert "ka.RelativeAttention(" in code


def test_search_finds_a_layer_and_links_to_its_page(browser, site_url):  # noqa: F811
    from selenium.webdriver.common.by import By

    browser.get(site_url)
    box = browser.find_element(By.CSS_SELECTOR, "input.md-search__input")
    if not box.is_displayed():  # a narrow window: behind the header's icon
        browser.find_element(By.CSS_SELECTOR,
                             "label.md-header__button[for='__search']").click()
        _wait(browser, lambda driver: box.is_displayed())
    box.click()
    box.send_keys("RelativeAttention")

    def result_links(driver):
        hrefs = driver.execute_script(
            "return Array.from(document.querySelectorAll("
            "'.md-search-result__link')).map(a => a.href);")
        return hrefs if any("api/layers/RelativeAttention/" in href
                            for href in hrefs) else False

    hrefs = _wait(browser, result_links)
    target = next(href for href in hrefs
                  if "api/layers/RelativeAttention/" in href)
    browser.get(target)
    assert "Multi-head self-attention that sees how far apart" in _text(
        browser)


def test_the_reproductions_page_shows_its_scoreboard(
        browser, site_url):  # noqa: F811
    """The verdicts counted overall and by system, then one table with a
    row per claim (as many as counted), the plot, and each system's
    details, collapsed until opened."""
    from selenium.webdriver.common.by import By

    browser.get(f"{site_url}reproductions/")
    text = _text(browser)
    overall = re.search(r"(\d+) claims: \d+ yes · \d+ partly · \d+ no\.",
                        text)
    assert overall, text[:2000]
    assert re.search(r"Universal Transformer: \d+ yes · \d+ partly · \d+ no",
                     text)
    table = browser.execute_script(
        "const table = document.querySelector('article table');"
        "return [Array.from(table.querySelectorAll('thead th'))"
        "        .map(th => th.textContent.trim()),"
        "        Array.from(table.querySelectorAll('tbody tr'))"
        "        .map(tr => tr.lastElementChild.textContent.trim())];")
    headers, verdicts = table
    assert headers == ["system", "#", "claim", "paper", "ours", "verdict"]
    assert len(verdicts) == int(overall.group(1))
    assert set(verdicts) <= {"✓ yes", "◐ partly", "✗ no"}
    assert browser.execute_script(
        "const image = document.querySelector("
        "'article img[src$=\"reproductions.png\"]');"
        "return image.complete && image.naturalWidth > 0;")
    details = browser.find_elements(By.CSS_SELECTOR, "article details")
    assert len(details) >= 5
    assert not any(block.get_attribute("open") for block in details)
    command = details[0].find_element(By.CSS_SELECTOR, "pre")
    assert not command.is_displayed()
    details[0].find_element(By.CSS_SELECTOR, "summary").click()
    _wait(browser, lambda driver: command.is_displayed())
    assert "benchmarks" in command.text or ".py" in command.text


class _References(html.parser.HTMLParser):
    """The `href` of every `<a>` and the `src` of every `<img>` of a page."""

    def __init__(self):
        super().__init__()
        self.links, self.images = [], []

    def handle_starttag(self, tag, attributes):
        attributes = dict(attributes)
        if tag == "a" and attributes.get("href"):
            self.links.append(attributes["href"])
        if tag == "img" and attributes.get("src"):
            self.images.append(attributes["src"])


def _status(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_every_image_loads_and_every_internal_link_answers(
        browser, site_url, pages):  # noqa: F811
    """Every page's links and images are read from its HTML; each internal
    link must answer 200, and each page with images is opened in the
    browser, where every image must have loaded (`naturalWidth > 0`)."""
    assert len(pages) > 30
    links = set()
    pages_with_images = []
    for page in pages:
        with urllib.request.urlopen(page, timeout=10) as response:
            references = _References()
            references.feed(response.read().decode())
        for href in references.links:
            url = urllib.parse.urldefrag(urllib.parse.urljoin(page, href)).url
            if url.startswith(site_url):
                links.add(url)
        if references.images:
            pages_with_images.append((page, len(references.images)))
    assert set(pages) <= links  # every page is linked from the navigation
    failed = [(link, status) for link in sorted(links)
              if (status := _status(link)) != 200]
    assert failed == []

    figures = 0
    for page, count in pages_with_images:
        browser.get(page)
        _wait(browser, lambda driver: driver.execute_script(
            "return document.readyState") == "complete")
        loaded = browser.execute_script(
            "return Array.from(document.images)"
            ".map(i => [i.src, i.complete && i.naturalWidth > 0]);")
        assert len(loaded) == count, page
        assert [src for src, ok in loaded if not ok] == [], page
        figures += count
    assert figures >= 8  # the guides' seven figures, and the home page's
