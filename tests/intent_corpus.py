"""Labelled texts for the web-search intent classifier: (text, expected_search, expected_google).

Comments marked BORDERLINE record a deliberate choice; docs/intent.md explains the rules behind them.
"""

from __future__ import annotations

Case = tuple[str, bool, bool]

# --- English: hard hits (never suppressed, even in code context) --------------------------------
EN_HARD: list[Case] = [
    ("/search latest rust release notes", True, False),
    ("What is the weather in Paris?\n/search", True, False),
    ("web search: who won the 2026 world cup", True, False),
    ("Web Search: 2026 F1 calendar", True, False),
    ("Do a websearch for the Python 3.14 changelog", True, False),
    ("please run an internet search on this company", True, False),
    ("Search the web for the current price of copper", True, False),
    ("SEARCH THE WEB FOR TODAY'S WEATHER IN OSLO", True, False),
    ("search    the\n web for it", True, False),
    ("use the web-search tool to check this", True, False),
    ("internet-search the phrase 'hello world'", True, False),
    ("web search, please!!!", True, False),
    ("Can you search online for a cheap flight to Rome?", True, False),
    ("search the internet for reviews of this laptop", True, False),
    ("I don't know - look it up online.", True, False),
    ("look online for a used bike", True, False),
    ("browse the web and tell me what's trending", True, False),
    ("google it", True, True),
    ("Google this error for me: ECONNRESET", True, True),
    ("Do a Google search for the best ramen in Tokyo", True, True),
    ("search on Google for the release date", True, True),
    # Hard hits win over code context: the user asked for the web in so many words.
    ("Search the web for how to fix `ModuleNotFoundError` in src/app.py", True, False),
    ("git log shows a weird error; do a web search for it", True, False),
]

# --- English: soft hits (verb + noun, no code context) ----------------------------------------
EN_SOFT: list[Case] = [
    ("find the latest news about the Mars mission", True, False),
    ("Search for articles on quantum error correction", True, False),
    ("Look up information on the 1918 flu pandemic", True, False),
    ("can you look for reports of the outage in Frankfurt?", True, False),
    ("Google the news about the election", True, True),
    ("find info on cheap hotels in Lisbon", True, False),
    ("Look it up: any recent news on the merger?", True, False),
    ("I'm looking for news on the SpaceX launch", True, False),
    ("Find me an article about sourdough starters", True, False),
    ("FIND NEWS ABOUT THE STRIKE", True, False),
    # "google" anywhere in a hit makes it Google-preferred, even as the company's name.
    ("search for information about Google's Q3 earnings", True, True),
    # Product names that look like code are still prose.
    ("Find news about Next.js 15", True, False),
    ("find the latest info about iPhone 17 battery life", True, False),
    ("search for news on macOS 26", True, False),
    ("Find out what the news says about Washington D.C. traffic", True, False),
    ("Search for reports on the heat wave, e.g. in Spain and Italy.", True, False),
    ("find information about the internet outage", True, False),
    ("Search news coverage of the summit and/or op-eds", True, False),
    ("find online reviews for the Framework laptop", True, False),
    ("Where can I find information on visa requirements for Japan?", True, False),
    ("searching for info on the new tax rules", True, False),
    # A URL is the web, not a path in a working tree.
    ("find articles at https://example.com/news/ about solar power", True, False),
    ("Find info on Docker's new pricing", True, False),
    ("find news (latest first) about the rail strike", True, False),
]

# --- English: code, file and shell requests that must not trigger -------------------------------
EN_CODE: list[Case] = [
    ("git log --since=yesterday", False, False),
    ("rg foo", False, False),
    ('grep -r "news" src/', False, False),
    ("search this file for X", False, False),
    ("find the function that returns the user info", False, False),
    ("find all reports in the repo", False, False),
    ("look up the definition of parse_news in utils.py", False, False),
    ("search the codebase for information about auth", False, False),
    ("search for usages of foo in src/", False, False),
    ("find files matching *.py", False, False),
    ("look for the bug in the news feed component", False, False),
    ("find information about the error in the logs", False, False),
    ("Find where we build the news query in ./api/feeds", False, False),
    ("search for getUserInfo and rename it", False, False),
    ("find the info panel class and make it wider", False, False),
    ("search src/ for the news importer", False, False),
    ("find the NEWS_API_KEY and rotate it, the info is stale", False, False),
    ("look for `news` in the config", False, False),
    ("$ grep -rn info .", False, False),
    ("find . -name '*.md' | xargs grep -l news", False, False),
    ("search for the report generator method", False, False),
    ("find the variable that holds the article count", False, False),
    ("look up where self.news is set", False, False),
    ("search the tests for anything about web", False, False),
    ("find information about the error on line 42", False, False),
    ("search the docs folder for info about deployment", False, False),
    ("add a news filter to the search bar", False, False),
    ("find the article model in models.py and add a slug field", False, False),
    ("look for the report() call that crashes", False, False),
    ("find info on the stack trace below", False, False),
    ("search the monorepo for info on feature flags", False, False),
    ("cd /var/log && grep info *", False, False),
    ("find the news module and remove dead code", False, False),
    ("search the workspace for articles.json", False, False),
    ("look for information in the README.md", False, False),
    ("find the fetchNews handler; the news list is empty", False, False),
    ("Find the place in this code where online status is computed", False, False),
    ("search the database for users with no info", False, False),
    ("look up the news item with id == 3", False, False),
    ("use rg to find every article template", False, False),
    # Mentions of a route or a module, not requests to search.
    ("fix the `/search` endpoint, it returns 500", False, False),
    ("the api/search route returns 500", False, False),
    ("rename websearch.py to web_search.py", False, False),
]

# --- English: ordinary chat that must not trigger -----------------------------------------------
EN_CHAT: list[Case] = [
    ("research the topic of renewable energy", False, False),
    ("what's new in your info panel?", False, False),  # no verb: a question about a UI, not a search
    ("I found some information in the manual", False, False),  # "found" is not "find"
    ("my findings on the internet are inconclusive", False, False),  # "findings" is not "find"
    ("Tell me a joke about the internet", False, False),
    ("How does a search engine work?", False, False),  # verb, but no noun from the list
    ("Summarize this article for me", False, False),
    ("What is Google?", False, False),
    ("The researchers published a report", False, False),
    ("Explain binary search", False, False),
    ("write a poem about the news cycle", False, False),
    ("Can you help me find my keys?", False, False),
    ("The website has a search feature", False, False),
    ("hello", False, False),
    ("", False, False),
    ("   \n\t ", False, False),
    ("the research-based info was useful", False, False),
    # BORDERLINE: past tense is narrative ("I already tried"), not a request; the verbs are
    # search/find/look up/look for/google and their -ing forms only.
    ("I searched online but found nothing", False, False),
    # BORDERLINE: no verb, so no rule fires; the user can say "search the web".
    ("what's the latest news on the election?", False, False),
    # BORDERLINE: the code-noun veto is tuned for coding agents and costs some prose queries.
    ("find news reports about the Epstein files", False, False),
    ("search for news on the repo market", False, False),
    ("find information about online classes", False, False),
    ("find news on the class action against the airline", False, False),
    ("Look up the news on line 5 of the subway", False, False),
]

# --- Chinese: hard hits (all Google-preferred, per the design) ------------------------------------
ZH_HARD: list[Case] = [
    ("帮我谷歌搜索一下最新的iPhone价格", True, True),
    ("谷歌一下这个报错", True, True),  # 报错 is a code noun, but hard hits are never vetoed
    ("百度一下今天的天气", True, True),  # BORDERLINE: names Baidu, yet Google-preferred by the design
    ("你百度一下吧", True, True),
    ("用谷歌搜索：2026年世界杯冠军", True, True),
    ("谷歌一下 src/main.py 里的这个报错是什么意思", True, True),
    ("请谷歌一下。", True, True),
    ("帮我百度一下这个词什么意思", True, True),
    ("谷歌搜索 Python 3.14 新特性", True, True),
    # Mixed spellings of 谷歌一下 / 谷歌搜索.
    ("google 一下这个报错", True, True),
    ("帮我Google搜索最新的汇率", True, True),
]

# --- Chinese: soft hits ---------------------------------------------------------------------------
ZH_SOFT: list[Case] = [
    ("上网查一下明天北京的天气", True, False),
    ("帮我上网找找这本书的评价", True, False),
    ("上网看看有没有更新的版本", True, False),
    ("上网搜索一下", True, False),
    ("上网查查这家餐厅的评价", True, False),
    ("你能上网吗？", True, False),  # BORDERLINE: the design makes any 上网 an intent
    ("我家上网很慢怎么办", True, False),  # BORDERLINE: same rule; a connectivity complaint still hits
    ("搜索一下最近的新闻", True, False),
    ("帮我查找关于台风的报道", True, False),
    ("搜一下这家公司的信息", True, False),
    ("联网搜索：今天的汇率", True, False),
    ("在网络上查找这首歌的歌词", True, False),
    ("搜搜最新的科技新闻", True, False),
    ("帮我搜索一下有关这个演员的报道和信息", True, False),
    ("请搜索网络上关于这个事件的讨论", True, False),
    ("搜索新闻：OpenAI 发布会", True, False),
    ("用谷歌搜新闻", True, True),  # not the hard phrase 谷歌搜索, but 谷歌 in a hit is Google-preferred
    ("用google搜索最新信息", True, True),
    ("查找有关新冠疫苗的最新报道", True, False),
    ("搜索：特斯拉 财报 新闻", True, False),
    ("麻烦搜一下网络上的评价，谢谢！", True, False),
    ("能不能搜索一下联网的资料", True, False),
    ("搜索关于 Node.js 的最新新闻", True, False),
    ("帮我查找一下马斯克的最新信息", True, False),
    ("查找今天的头条新闻", True, False),
    ("搜一下 iPhone 17 的发布会报道", True, False),
    ("搜索：最新 AI 新闻！！", True, False),
    ("能帮我搜一下网络上关于这款手机的评测吗？", True, False),
    ("请联网查找最新的政策信息", True, False),
    ("搜一下最近关于地震的报道", True, False),
    ("查找一下网络上的相关信息", True, False),
    ("搜索 OpenAI 最新的新闻", True, False),
    ("搜索谷歌最近的新闻", True, True),
]

# --- Mixed Chinese and English ------------------------------------------------------------------
MIXED: list[Case] = [
    ("能不能 web search 一下今天的汇率", True, False),
    ("请 search the web 关于比特币价格", True, False),
    ("/search 今天的新闻", True, False),
    ("帮我 google it", True, True),
    ("帮我 search 一下 news about 台风", True, False),
    ("帮我 find the latest news on 比特币", True, False),
    ("Search the web 看看今天的新闻", True, False),
    ("用 rg 搜索 news 相关的信息", False, False),
    ("在 README.md 里 search 一下 info", False, False),
]

# --- Chinese: code, file and shell requests that must not trigger -------------------------------
ZH_CODE: list[Case] = [
    ("在代码里搜索处理新闻的函数", False, False),
    ("查找返回用户信息的函数", False, False),
    ("搜索这个文件里的报道相关逻辑", False, False),
    ("在 src/news/ 下查找信息", False, False),
    ("查找日志里的错误信息", False, False),
    ("搜一下仓库里有没有处理新闻的代码", False, False),
    ("帮我查找 `fetch_news` 的调用位置，看看信息是怎么传的", False, False),
    ("在项目里搜索所有的报道模型", False, False),
    ("查找网络请求失败的原因", False, False),
    ("搜索框里输入新闻关键词没有反应", False, False),
    ("在数据库里查找用户信息", False, False),
    ("写一个单元测试，测试搜索新闻的接口", False, False),
    ("查找 utils.py 里解析新闻的逻辑", False, False),
    ("这个函数检查用户是否能上网", False, False),  # 上网 is soft, so the code veto applies
    ("帮我在脚本里加一个上网检测", False, False),
    ("查找 getNewsList 在哪里被调用，返回的信息不对", False, False),
    ("搜索 README.md 里关于部署的信息", False, False),
    ("在 components 目录下搜索新闻卡片组件", False, False),
    ("帮我查找 stack trace 里的报错信息", False, False),
    ("搜索 news_feed 模块里的报道字段", False, False),
    ("git grep 搜一下新闻相关的信息", False, False),
]

# --- Chinese: ordinary chat that must not trigger ------------------------------------------------
ZH_CHAT: list[Case] = [
    ("今天天气怎么样？", False, False),
    ("给我讲个关于新闻记者的笑话", False, False),  # noun, no verb
    ("这篇报道写得怎么样？", False, False),
    ("我在研究网络安全", False, False),
    ("帮我总结一下这段信息", False, False),
    ("什么是搜索引擎？", False, False),  # verb, no noun
    ("翻译：I love the internet", False, False),
    ("请写一篇关于网络文学的文章", False, False),
    ("你好", False, False),
    ("谷歌是一家什么样的公司？", False, False),  # 谷歌 alone is not a hit
    ("百度是什么？", False, False),
    ("新闻联播几点开始？", False, False),
    ("搜狐是一家门户网站", False, False),
    ("我在网络上看到一条信息", False, False),
    ("这个报道的信息量很大", False, False),
    # BORDERLINE: 查 and 找 alone are not in the verb list {搜索, 查找, 搜}; the design's words are
    # kept exact rather than widened to every everyday "look up".
    ("我要查一下新闻", False, False),
    ("帮我找一下新闻", False, False),
]

CORPUS: list[Case] = EN_HARD + EN_SOFT + EN_CODE + EN_CHAT + ZH_HARD + ZH_SOFT + MIXED + ZH_CODE + ZH_CHAT
