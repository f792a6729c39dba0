"""hub/search/passages.py select: the sentences of a page that answer a query come out whole, within
max_chars, in document order, for English and Chinese; any text and query give a bounded answer."""

from __future__ import annotations

import logging
import time
import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hub.search.passages import ELLIPSIS, MAX_INPUT, select

NAV = """Home
News
Travel
Weather
Sign in
Subscribe
We use cookies to give you the best experience on our website. By continuing to browse you agree to our use of cookies. Manage your preferences at any time.
Accept all
Reject all
"""

BODY = [
    "Kelmar is a river town in the north of the region, known for its old market square and its many bridges. "
    "The town grew around a ford where traders crossed the river on their way to the coast. "
    "Today about twelve thousand people live in Kelmar, most of them in the old town on the east bank.",
    "The climate is mild, with wet winters and warm summers, and the river often floods in early spring. "
    "Farmers in the valley grow barley, potatoes and apples, and many families still keep a few sheep. "
    "The weekly market on the square sells cheese, smoked fish and bread from the villages upstream.",
    "The abbey was founded in the twelfth century by monks from the south, who drained the marshes along the river. "
    "It was the largest landowner in the valley until it was closed four hundred years later. "
    "Its ruins, a church tower and part of the cloister, are open to visitors all year.",
    "Kelmar is best known today for its bridge festival, which opens every summer on the first Saturday of July. "
    "Boats decorated with flowers sail under the bridges while choirs sing on the banks. "
    "The festival was first held in the 1950s and now draws visitors from across the country.",
    "The new motorway opened in 2005 and passes a few kilometres west of the town. "
    "Since then the old main road through the market square has been much quieter. "
    "Buses run every hour to the regional capital, and the journey takes about forty minutes.",
    "The first bridge at Kelmar was a wooden structure built by the monks of the abbey. "
    "It was washed away by floods several times and was rebuilt each time by the town council. "
    "A stone bridge replaced it in the eighteenth century, and parts of its piers can still be seen at low water.",
    "The railway reached the town late in the nineteenth century. "
    "A station was built on the west bank, far from the old town, and a ferry carried passengers across the river. "
    "Merchants complained for decades that the ferry was slow, expensive and unsafe in winter.",
    "Plans for a new road bridge were drawn up many times, but the council could never agree on the money. "
    "Engineers from the capital visited the site and wrote long reports about the soft ground on the west bank. "
    "Local newspapers followed the debate closely and printed letters from readers for and against the project.",
    "Work on the new crossing finally began after the council borrowed money from the regional bank. "
    "Hundreds of workers came to the town, and a temporary village of huts stood beside the river for years. "
    "The steel for the main span was brought by rail from the foundries in the south.",
    "The Varnholt bridge opened on 14 March 1931 after six years of construction, named after the engineer "
    "Elise Varnholt who designed its single steel arch. "
    "Thousands of people walked across it on the first day, and a brass band played on the east bank. "
    "The bridge is 412 metres long and carried both road traffic and a tram line until the trams were withdrawn.",
    "During the war the bridge was damaged by shelling, and it was repaired in the years that followed. "
    "In the late twentieth century a second, wider bridge was built downstream to take heavy lorries away from "
    "the old town. The older bridge is now used by cyclists, pedestrians and local buses.",
    "Visitors to Kelmar can walk along the river path from the market square to the abbey ruins. "
    "The town museum has a room about the history of its bridges, with models, drawings and photographs. "
    "Guided tours start at the tourist office every morning in summer.",
]

FOOTER = """Share this article
Related: The ten most beautiful bridges in the region
Related: Where to eat in Kelmar
About us | Contact | Privacy policy | Terms of use
© 2024 Regional Travel Guide. All rights reserved.
"""

PAGE = NAV + "\n".join(BODY) + "\n" + FOOTER
FACT = "The Varnholt bridge opened on 14 March 1931 after six years of construction"

ZH_BODY = [
    "凯尔马是本地区北部的一座河畔小镇，以古老的集市广场和众多桥梁而闻名。小镇最初形成于一处浅滩旁边，商人们在前往海岸的途中从这里渡河。"
    "如今大约有一万二千人住在凯尔马，其中大多数人住在东岸的老城区。",
    "这里气候温和，冬季多雨，夏季温暖，每年早春河水经常泛滥。山谷里的农民种植大麦、土豆和苹果，许多人家至今还养着几只羊。"
    "每周一次的集市上出售奶酪、熏鱼和上游村庄烤制的面包。镇上的面包房已经传到了第四代，店主说配方从来没有改过。",
    "修道院建于十二世纪，由来自南方的僧侣创建，他们排干了河边的沼泽。在随后的四百年里，修道院一直是山谷中最大的地主。"
    "修道院关闭以后，土地被分给了附近的农户。如今遗址只剩下一座教堂钟楼和部分回廊，全年向游客开放。",
    "凯尔马最有名的是每年夏天举行的大桥节，节日在七月的第一个星期六开幕。装饰着鲜花的小船从一座座桥下驶过，合唱团在岸边歌唱。"
    "大桥节始于二十世纪五十年代，如今吸引着全国各地的游客。节日期间，镇上的旅馆往往提前几个月就被订满。",
    "新的高速公路于2005年建成通车，从小镇以西几公里处经过。从那以后，穿过集市广场的老公路安静了许多。"
    "每小时都有一班公共汽车开往地区首府，车程大约四十分钟。镇上还有一所中学和两所小学，许多学生每天坐校车上学。",
    "镇上的人喜欢在傍晚沿着河岸散步，河边的长椅上总是坐满了聊天的老人。夏天的晚上，年轻人会在草地上野餐，孩子们在浅水里捉小鱼。"
    "秋天是苹果收获的季节，许多农场向游客开放，让他们自己采摘。冬天河面偶尔会结冰，但已经很多年没有冻得能在上面滑冰了。",
    "小镇的经济过去主要依靠渔业和木材贸易，河上曾经漂满了运往海岸的木筏。二十世纪中期以后，木材厂陆续关闭，许多年轻人搬到了城市。"
    "近年来，旅游业和小型手工作坊让小镇重新热闹起来，老仓库被改建成了画廊、咖啡馆和家庭旅馆。",
    "镇中学建于1897年，是本地区最古老的中学之一，校舍至今仍在使用。学校有一支很有名的合唱团，曾经多次在全国比赛中获奖。"
    "每年毕业典礼那天，学生们会按照传统走过老桥，向河里投下一束鲜花。",
    "凯尔马的方言和周围村庄略有不同，一些老人至今仍把集市叫做“渡口”。当地的民间故事大多和河流有关，讲的是洪水、渡船和河里的精灵。"
    "镇图书馆收藏了一百多年来的地方报纸，研究者可以在阅览室里免费查阅。",
    "说到美食，凯尔马人最自豪的是熏鱼和苹果酒。熏鱼用山毛榉木慢慢熏制，要花整整两天时间。"
    "苹果酒则在每年十一月开桶，开桶那天全镇的人都会聚到集市广场，品尝当年的新酒。",
    "镇上的足球俱乐部成立于1921年，主场就在河边的草地上。俱乐部从来没有进入过全国联赛，但在本地区的比赛中赢过好几次冠军。"
    "每逢主场比赛，看台上总能听到老球迷用方言唱的队歌。",
    "镇议会每月开会一次，会议对所有居民开放。议会最近讨论的主要问题是停车位不足和河岸的防洪工程。"
    "有居民提议在老城区禁止汽车通行，但商店店主们担心顾客会因此减少。",
    "凯尔马出过几位有名的人物，其中包括一位写过许多河流诗歌的诗人和一位研究候鸟迁徙的生物学家。"
    "诗人的故居就在集市广场旁边，现在是一间小小的纪念馆，每个星期天下午开放。",
    "每年秋天都会有成群的候鸟在河边的湿地停留，观鸟爱好者从各地赶来。湿地保护区设有木制步道和观察小屋，游客需要保持安静。"
    "保护区的志愿者每周末都会带领免费的观鸟活动，并向孩子们介绍常见的鸟类。",
    "镇上唯一的医院建于二十世纪六十年代，病人多的时候常常需要转到地区首府。医院旁边是一座小公园，园里种着几十棵老栗树。"
    "每到秋天，孩子们会在树下捡栗子，带回家让大人烤着吃。",
    "小镇的住房大多是两三层的砖房，屋顶铺着红瓦。老城区的街道很窄，许多房子的门楣上还刻着建造的年份和主人的名字。"
    "近些年来，一些外地人在这里买下老房子，把它们改造成度假屋，房价也随之上涨。",
    "河上的渔民如今已经不多了，只有几户人家还在春天捕捞鳗鱼。他们的小船停在旧码头边，船身涂着蓝白两色。"
    "老渔民说，河水比他们年轻的时候干净了许多，但鱼却少了。",
    "凯尔马每年冬天都会举办一次手工艺市场，摊位沿着主街一直排到教堂门口。出售的商品有羊毛织品、木雕、陶器和蜂蜡蜡烛。"
    "市场上最受欢迎的是热苹果酒和刚出炉的姜饼，排队的人常常一直排到街角。",
    "当地的气象站有一百多年的观测记录，记录显示最近几十年冬天明显变暖。最大的一次洪水发生在1845年，河水漫进了集市广场。"
    "广场边一座房子的墙上至今还标着当年的水位，比人的头顶还高。",
    "凯尔马的第一座桥是修道院的僧侣们建造的木桥。这座木桥曾多次被洪水冲毁，每一次都由镇议会出资重建。"
    "十八世纪时，一座石桥取代了木桥，枯水季节仍然可以看到它的部分桥墩。",
    "十九世纪末，铁路修到了小镇。火车站建在西岸，离老城区很远，乘客只能坐渡船过河。"
    "几十年来，商人们一直抱怨渡船太慢、太贵，而且冬天很不安全。",
    "修建一座新公路桥的计划被提出过很多次，但议会始终无法就资金问题达成一致。首都的工程师们曾多次来到现场，并就西岸松软的地基写了很长的报告。"
    "当地报纸密切关注这场争论，刊登了许多支持和反对这个项目的读者来信。",
    "议会最终从地区银行借到了钱，新桥的工程才终于开工。数百名工人来到小镇，河边的临时工棚村存在了好几年。主跨所用的钢材是从南方的铸造厂经铁路运来的。",
    "瓦恩霍尔特大桥于1931年3月14日正式通车，历时六年建成，以设计其单跨钢拱的工程师瓦恩霍尔特命名。"
    "通车第一天，成千上万的人步行过桥，一支铜管乐队在东岸演奏。大桥全长四百一十二米，既通行汽车也通行有轨电车，直到电车停运为止。",
    "战争期间，大桥被炮火损坏，并在随后几年里得到修复。二十世纪后期，下游又修建了第二座更宽的桥，让重型卡车不再穿过老城区。"
    "如今老桥主要供骑自行车的人、行人和本地公交车使用。",
    "游客可以沿着河边小路从集市广场一直走到修道院遗址。镇博物馆有一个展厅专门介绍当地桥梁的历史，展出模型、图纸和照片。夏季每天上午都有导游带领的参观活动从游客中心出发。",
]
ZH_NAV = "首页\n新闻\n旅游\n天气\n登录\n本网站使用Cookie来改善您的浏览体验。继续浏览即表示您同意我们使用Cookie。\n全部接受\n"
ZH_FOOTER = "\n分享本文\n相关阅读：本地区最美的十座桥\n相关阅读：凯尔马美食指南\n关于我们 | 联系方式 | 隐私政策\n版权所有。\n"
ZH_PAGE = ZH_NAV + "\n".join(ZH_BODY) + ZH_FOOTER
ZH_FACT = "瓦恩霍尔特大桥于1931年3月14日正式通车"


def total(passages: list[str]) -> int:
    return sum(map(len, passages))


def core(passage: str) -> str:
    """The passage without the ellipses select adds where it cut a sentence."""
    return passage.removeprefix(ELLIPSIS).removesuffix(ELLIPSIS)


def cores(passage: str) -> list[str]:
    """What a passage may be a copy of: itself, or itself without an ellipsis select added at either
    end (the text may have its own ellipses)."""
    inner = passage.removeprefix(ELLIPSIS)
    return [passage, inner, passage.removesuffix(ELLIPSIS), inner.removesuffix(ELLIPSIS)]


# -- grounding ------------------------------------------------------------------------------------


def test_english_fact_deep_in_a_long_page_is_selected() -> None:
    assert PAGE.index(FACT) > 2500  # past the opening that the no-match fallback would give
    passages = select(PAGE, "When did the Varnholt bridge open?", 2000)
    assert total(passages) <= 2000
    sentence = FACT + ", named after the engineer Elise Varnholt who designed its single steel arch."
    assert any(sentence in p for p in passages), passages  # whole, not cut
    assert not any("cookie" in p.lower() or "Sign in" in p for p in passages)


def test_english_fact_ranks_first_within_a_small_budget() -> None:
    # Room for about one sentence: it must be the one with the answer, not another about bridges.
    passages = select(PAGE, "When did the Varnholt bridge open?", 200)
    assert len(passages) == 1 and FACT in passages[0], passages


def test_chinese_fact_deep_in_a_long_page_is_selected() -> None:
    assert ZH_PAGE.index(ZH_FACT) > 2000
    passages = select(ZH_PAGE, "瓦恩霍尔特大桥是哪一年通车的？", 2000)
    assert total(passages) <= 2000
    assert any(ZH_FACT in p for p in passages), passages
    assert not any("Cookie" in p or "首页" in p for p in passages)


def test_chinese_fact_ranks_first_within_a_small_budget() -> None:
    passages = select(ZH_PAGE, "瓦恩霍尔特大桥什么时候通车", 60)
    assert passages == ["瓦恩霍尔特大桥于1931年3月14日正式通车，历时六年建成，以设计其单跨钢拱的工程师瓦恩霍尔特命名。"]


def test_chinese_sentences_end_at_chinese_punctuation() -> None:
    text = "今天天气很好。我们去公园散步吧！你想去哪里？河边的桥很漂亮；桥上有很多人。"
    assert select(text, "桥", 15) == ["河边的桥很漂亮；桥上有很多人。"]  # a one-character word inside longer ones
    # With room to spare, the sentences next to a hit come too, as its context.
    assert select(text, "桥", 100) == ["你想去哪里？河边的桥很漂亮；桥上有很多人。"]
    assert select(text, "公园散步", 100) == ["今天天气很好。我们去公园散步吧！你想去哪里？"]


def test_a_number_in_the_query_beats_sentences_sharing_only_common_words() -> None:
    text = (
        "The harbour festival brings many visitors to the town every year. "
        "Visitors to the harbour festival enjoy music, boats and food from the harbour market. "
        "In 1987 the organisers counted forty thousand guests. "
        "The harbour festival visitors often stay for the whole week of the festival."
    )
    passages = select(text, "How many visitors came to the harbour festival in 1987?", 60)
    assert passages == ["In 1987 the organisers counted forty thousand guests."]


def test_a_name_in_the_query_beats_sentences_sharing_only_common_words() -> None:
    text = (
        "The harbour bridge design was debated by engineers for years. "
        "Engineers said the harbour bridge design was too costly, "
        "and the harbour board rejected the bridge design. "
        "Varnholt disagreed. "
        "In the end the engineers and the harbour board agreed on a cheaper bridge design."
    )
    passages = select(text, "What did Varnholt think of the harbour bridge design?", 20)
    assert passages == ["Varnholt disagreed."]


def test_common_english_words_do_not_decide() -> None:
    text = (
        "What is the use of the thing that is there? It is what it is, and that is the way of it. "
        "The tram line was closed in 1962. "
        "There is what there was and what there will be of the town."
    )
    assert select(text, "What is the history of the tram?", 40) == ["The tram line was closed in 1962."]


def test_common_chinese_words_do_not_decide() -> None:
    # 什么 (what) twice outweighs 通车 (opens to traffic) once, unless common words are left out.
    text = "他问这是什么，那是什么。小时候的事情谁还记得。新的电车线路下个月通车。"
    assert select(text, "什么时候通车？", 12) == ["新的电车线路下个月通车。"]


# -- shape of the answer --------------------------------------------------------------------------


def test_adjacent_selected_sentences_merge_and_distant_ones_do_not() -> None:
    text = (
        "Alpha moon rises. Beta moon sets. Gamma sun shines. Delta sun burns. "
        "Epsilon sun glows. Zeta moon waits."
    )
    passages = select(text, "moon", 1000)
    # The moon sentences, and sentences next to them as context (scored lower, still in the budget).
    assert passages == [
        "Alpha moon rises. Beta moon sets. Gamma sun shines.",
        "Epsilon sun glows. Zeta moon waits.",
    ]
    assert select(text, "moon", 40) == ["Alpha moon rises. Beta moon sets."]


def test_no_match_gives_the_opening_of_the_text() -> None:
    assert select(PAGE, "quantum chromodynamics", 60) == ["Home\nNews\nTravel\nWeather\nSign in\nSubscribe"]
    # Up to the first sentence that does not fit, though a shorter one after it would.
    assert select(PAGE, "", 300) == [PAGE[: PAGE.index("Reject all") + len("Reject all")]]


def test_empty_text_or_no_room_gives_nothing() -> None:
    assert select("", "bridge", 100) == []
    assert select("   \n\n  ", "bridge", 100) == []
    assert select(PAGE, "bridge", 0) == []
    assert select(PAGE, "bridge", -5) == []


def test_a_sentence_longer_than_max_chars_is_cut_at_a_word_boundary() -> None:
    words = [f"word{i}" for i in range(400)]
    words[200] = "Varnholt"
    text = "Short opening sentence. " + " ".join(words) + ". Short closing sentence."
    [passage] = select(text, "Varnholt", 100)
    assert passage.startswith(ELLIPSIS) and passage.endswith(ELLIPSIS) and len(passage) <= 100
    assert "Varnholt" in passage
    inner = core(passage)
    at = text.index(inner)
    assert text[at - 1] == " " and text[at + len(inner)] == " "  # whole words on both sides
    # The opening of a long first sentence, when nothing matches, ends with the ellipsis only.
    [opening] = select(" ".join(words), "nothing", 50)
    assert opening == "word0 word1 word2 word3 word4 word5 word6 word7…"


def test_control_characters_never_reach_a_passage_nor_join_two() -> None:
    text = "The moon rises.\x00\x1b[31mThe moon sets.\x7f The moon waits."
    passages = select(text, "moon", 1000)
    assert passages == ["The moon rises.", "[31mThe moon sets.", "The moon waits."]


def test_nothing_is_logged() -> None:
    # bm25s logs each index at DEBUG on its own logger; through a root handler that is a line per page.
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        assert select(PAGE, "Varnholt bridge", 500)
    finally:
        root.removeHandler(handler)
    assert [r.getMessage() for r in records] == []


@pytest.mark.parametrize(
    "text",
    [
        "!?." * 70_000,  # one run of terminators: linear, not re-scanned from every position
        "a.\n" * 70_000,  # tens of thousands of tiny sentences
        "ab " * 70_000,  # one endless sentence
        "字" * 200_000,
        "1" * 200_000,
        "\x00a\x01" * 70_000,
        "👍🏽\u200d" * 70_000,
    ],
    ids=["terminators", "tiny-sentences", "one-sentence", "cjk", "digits", "controls", "emoji"],
)
def test_hostile_input_is_bounded_in_time(text: str) -> None:
    started = time.monotonic()
    passages = select(text * 2, "a ab 字字 1 👍", 500)
    # About 0.2 s here; the bound leaves room for a loaded machine, not for a quadratic scan.
    assert time.monotonic() - started < 5
    assert total(passages) <= 500
    assert all(core(p) in text[:MAX_INPUT] for p in passages)


# -- properties -----------------------------------------------------------------------------------

ATOMS = st.sampled_from(
    [" ", "  ", "\n", "\n\n", "\t", "\r\n", ". ", "! ", "? ", ".", "。", "！", "？", "；", "…", "\x00", "\x1b",
     "\x85", "\u2028", "\u200d", "👍", "🇩🇪", "大桥", "通车", "1931", "3.5", "Varnholt", "bridge", "the", "of",
     "What", "e.g. the", "\"Quote.\" ", "桥", "a"]
)  # fmt: skip
TEXTS = st.lists(ATOMS | st.text(max_size=8), max_size=60).map("".join) | st.text(max_size=300)
QUERIES = st.lists(ATOMS | st.text(max_size=5), max_size=6).map("".join) | st.text(max_size=40)


def check(text: str, query: str, max_chars: int) -> list[str]:
    passages = select(text, query, max_chars)
    assert isinstance(passages, list) and all(isinstance(p, str) for p in passages)
    # Budget: every character counts, each ellipsis added at a cut included.
    assert total(passages) <= max(max_chars, 0)
    pos = 0
    for p in passages:
        assert p and p == p.strip()  # never empty, never padded
        assert not any(c in p for c in "\x00\x1b\x7f")  # control characters separate, never inside
        # A substring of the text, each after the one before: document order, no overlap.
        found = [(at, len(c)) for c in cores(p) if c and (at := text.find(c, pos)) >= 0]
        assert found, (p, text)
        at, size = min(found)
        pos = at + size
    # Text that shows anything and room for a character and two ellipses: never an empty answer.
    if max_chars >= 3 and any(not c.isspace() and unicodedata.category(c) != "Cc" for c in text):
        assert passages
    return passages


@settings(max_examples=300, deadline=None)
@given(text=TEXTS, query=QUERIES, max_chars=st.integers(-3, 400))
@example(text="", query="", max_chars=10)
@example(text="...", query=".", max_chars=2)
@example(text="Hello world", query="hello", max_chars=1)
@example(text="aaa bbb", query="bbb", max_chars=3)
@example(text="大桥大桥大桥。", query="大桥", max_chars=4)
def test_select_holds_its_promises_for_any_input(text: str, query: str, max_chars: int) -> None:
    assert check(text, query, max_chars) == select(text, query, max_chars)  # deterministic


@settings(max_examples=100, deadline=None)
@given(query=QUERIES, max_chars=st.integers(1, 3000), cut=st.integers(0, len(PAGE)))
def test_select_holds_its_promises_on_a_real_page(query: str, max_chars: int, cut: int) -> None:
    text = PAGE[cut:] + ZH_PAGE[: len(PAGE) - cut]
    passages = check(text, query, max_chars)
    if text.strip() and max_chars >= 200:
        assert passages  # a page and room for a sentence: something comes back, the opening at least


@settings(max_examples=100, deadline=None)
@given(text=TEXTS, max_chars=st.integers(1, 400))
def test_a_query_word_that_fits_is_found(text: str, max_chars: int) -> None:
    # A word the text contains once, in a sentence of its own that fits: select returns it.
    text = text.replace("Zyxwv", "") + "\nZyxwv.\n"
    assert any("Zyxwv." in p for p in select(text, "zyxwv", max(max_chars, 6)))
