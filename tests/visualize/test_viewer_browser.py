"""The viewer in a real headless browser (Debian's chromium + chromedriver,
driven by selenium): tokens render, hovering shades by the right row or
column, the selects switch layer and head, the checkbox shows numbers.

Without the browser or selenium the tests skip, saying how to install them;
with `KERAS_ATTENTION_REQUIRE_BROWSER=1` (CI sets it) they fail instead.
"""

import os
import shutil

import numpy as np
import pytest

from keras_attention.visualize import AttentionViewer

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
INSTALL = ("install them with `apt-get install chromium chromium-driver` "
           "and `pip install selenium`")

SOURCE = ["▁Ein", "▁Schnee", "ball", "▁fällt", "</script><b>x</b>"]
SOURCE_LABELS = ["Ein", "Schnee", "·ball", "fällt", "·</script><b>x</b>"]
TARGET = ["▁A", "▁snow", "ball", "▁falls"]
TARGET_LABELS = ["A", "snow", "·ball", "falls"]


def _missing():
    reasons = []
    try:
        import selenium  # noqa: F401
    except ImportError:
        reasons.append("selenium is not installed")
    for path in (CHROMIUM, CHROMEDRIVER):
        if shutil.which(path) is None:
            reasons.append(f"{path} is missing")
    return reasons


@pytest.fixture(scope="module")
def browser():
    reasons = _missing()
    if reasons:
        message = f"{'; '.join(reasons)}: {INSTALL}"
        if os.environ.get("KERAS_ATTENTION_REQUIRE_BROWSER") == "1":
            pytest.fail(f"KERAS_ATTENTION_REQUIRE_BROWSER=1 but {message}")
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(20)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def weights():
    logits = np.random.default_rng(0).normal(size=(2, 3, 4, 5)) * 2
    exp = np.exp(logits)
    return exp / exp.sum(axis=-1, keepdims=True)  # (L, N, T, S)


@pytest.fixture
def page(browser, weights, tmp_path):
    path = AttentionViewer(weights, TARGET, SOURCE).save(tmp_path / "a.html")
    browser.get(path.as_uri())
    return browser


def texts(driver, selector):
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]))"
        ".map(e => e.textContent);", selector)


def token_weights(driver, role):
    values = driver.execute_script(
        "return Array.from(document.querySelectorAll("
        "'#ka-' + arguments[0] + ' .token'))"
        ".map(e => e.getAttribute('data-weight'));", role)
    return [None if value is None else float(value) for value in values]


def shading(driver, role):
    """The alpha of each token's computed background colour."""
    colours = driver.execute_script(
        "return Array.from(document.querySelectorAll("
        "'#ka-' + arguments[0] + ' .token'))"
        ".map(e => getComputedStyle(e).backgroundColor);", role)
    return [float(colour.rstrip(")").split(",")[3]) if colour.count(",") == 3
            else 1.0 for colour in colours]


def matrix(driver):
    rows = driver.execute_script(
        "return Array.from(document.querySelectorAll('#ka-matrix tbody tr'))"
        ".map(r => Array.from(r.querySelectorAll('td'))"
        ".map(c => Number(c.getAttribute('data-weight'))));")
    return np.array(rows)


def hover(driver, role, index):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    token = driver.find_element(
        By.CSS_SELECTOR, f"#ka-{role} .token[data-index='{index}']")
    ActionChains(driver).move_to_element(token).perform()


def choose(driver, select_id, value):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, select_id)).select_by_value(value)


def test_tokens_render(page, weights):
    assert texts(page, "#ka-target .token .text") == TARGET_LABELS
    assert texts(page, "#ka-source .token .text") == SOURCE_LABELS
    assert texts(page, "#ka-layer option") == ["layer 0", "layer 1"]
    assert texts(page, "#ka-head option") == [
        "head 0", "head 1", "head 2", "average"]
    np.testing.assert_allclose(matrix(page), weights[0, 0], atol=1e-6)
    assert token_weights(page, "source") == [None] * 5  # nothing hovered


def test_hover_shades_by_the_row_or_column(page, weights):
    hover(page, "target", 2)
    np.testing.assert_allclose(token_weights(page, "source"), weights[0, 0, 2],
                               atol=1e-6)
    # Shaded relative to the largest weight of the selected matrix.
    np.testing.assert_allclose(shading(page, "source"),
                               weights[0, 0, 2] / weights[0, 0].max(),
                               atol=0.01)
    assert page.execute_script(
        "return document.querySelector('#ka-target .token.active')"
        ".dataset.index;") == "2"

    hover(page, "source", 1)
    np.testing.assert_allclose(token_weights(page, "target"),
                               weights[0, 0, :, 1], atol=1e-6)
    assert token_weights(page, "source") == [None] * 5


def test_selects_switch_layer_and_head(page, weights):
    choose(page, "ka-layer", "1")
    np.testing.assert_allclose(matrix(page), weights[1, 0], atol=1e-6)
    choose(page, "ka-head", "2")
    assert page.execute_script(
        "return [document.body.dataset.layer, document.body.dataset.head];"
    ) == ["1", "2"]
    np.testing.assert_allclose(matrix(page), weights[1, 2], atol=1e-6)
    hover(page, "target", 0)
    np.testing.assert_allclose(token_weights(page, "source"), weights[1, 2, 0],
                               atol=1e-6)

    choose(page, "ka-head", "avg")
    average = weights[1].mean(axis=0)  # (T, S)
    np.testing.assert_allclose(matrix(page), average, atol=1e-6)
    hover(page, "target", 3)
    np.testing.assert_allclose(token_weights(page, "source"), average[3],
                               atol=1e-6)


def test_checkbox_shows_the_numbers(page, weights):
    from selenium.webdriver.common.by import By

    cells = page.find_elements(By.CSS_SELECTOR, "#ka-matrix td .weight")
    assert not any(cell.is_displayed() for cell in cells)
    page.find_element(By.ID, "ka-numbers").click()
    assert all(cell.is_displayed() for cell in cells)
    assert texts(page, "#ka-matrix td .weight") == [
        f"{weight:.2f}" for weight in weights[0, 0].ravel()]
    hover(page, "target", 1)
    assert texts(page, "#ka-source .token .weight") == [
        f"{weight:.2f}" for weight in weights[0, 0, 1]]
    page.find_element(By.ID, "ka-numbers").click()
    assert not any(cell.is_displayed() for cell in cells)
